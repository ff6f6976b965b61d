"""The dequantised SmolLM2 kept in the cache is the GGUF model: same tokens, same logits, same
greedy reply; a changed GGUF file gets a new folder, and a cache that cannot be written costs time,
never a load."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytestmark = [pytest.mark.model, pytest.mark.slow]

CHAT = [{"role": "user", "content": "Which tool call moved the money, and who asked for it?"}]


def test_the_converted_folder_loads_the_same_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, smollm2
) -> None:  # type: ignore[no-untyped-def]
    import torch

    from auditor.core import local_model

    monkeypatch.setenv("AUDITOR_CACHE_DIR", str(tmp_path))
    converted = local_model.load_model()  # read from the GGUF file, then kept
    [folder] = (tmp_path / "models").iterdir()  # no scratch folder left beside it
    assert (folder / "model.safetensors").is_file() and (folder / "tokenizer.json").is_file()
    cached = local_model.load_model()  # read from the folder

    text = converted.tokenizer.apply_chat_template(CHAT, add_generation_prompt=True, tokenize=False)
    assert cached.tokenizer.apply_chat_template(CHAT, add_generation_prompt=True, tokenize=False) == text
    ids = converted.tokenizer(text, return_tensors="pt").input_ids
    assert torch.equal(cached.tokenizer(text, return_tensors="pt").input_ids, ids)
    with torch.no_grad():
        assert torch.equal(cached.model(ids).logits, converted.model(ids).logits)
        reply = converted.model.generate(ids, max_new_tokens=8, do_sample=False)
        assert torch.equal(cached.model.generate(ids, max_new_tokens=8, do_sample=False), reply)
    assert cached.model.generation_config.to_dict() == converted.model.generation_config.to_dict()
    # the session's copy (the default cache, or converted in this run) is the same model as well
    with torch.no_grad():
        assert torch.equal(smollm2.model(ids).logits, converted.model(ids).logits)


def test_a_changed_gguf_file_gets_a_new_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from auditor.core.local_model import _converted_dir

    monkeypatch.setenv("AUDITOR_CACHE_DIR", str(tmp_path / "cache"))
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF one")
    first = _converted_dir(gguf)
    assert first.parent == tmp_path / "cache" / "models" and first.name.startswith("model-")
    assert _converted_dir(gguf) == first
    gguf.write_bytes(b"GGUF two!")  # replaced: another size
    second = _converted_dir(gguf)
    os.utime(gguf, ns=(1, 1))  # same size, another time
    assert len({first, second, _converted_dir(gguf)}) == 3


def test_a_cache_that_cannot_be_written_leaves_nothing_and_raises_nothing(tmp_path: Path, smollm2) -> None:  # type: ignore[no-untyped-def]
    from auditor.core.local_model import _keep

    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    _keep(smollm2, blocker / "models" / "smollm2")  # its parent cannot be made
    assert blocker.read_text() == "not a folder"

    kept = tmp_path / "models" / "smollm2"
    kept.mkdir(parents=True)
    (kept / "config.json").write_text("{}")
    _keep(smollm2, kept)  # another process kept its copy first: that copy stays, no scratch left
    assert [p.name for p in (tmp_path / "models").iterdir()] == ["smollm2"]
    assert (kept / "config.json").read_text() == "{}"

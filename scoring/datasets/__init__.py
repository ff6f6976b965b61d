"""Target–factor datasets built by code: a registry by name, and JSONL files as their stored form."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError

from auditor.core.errors import InputError
from schemas.attribution import AttributionTask
from scoring.datasets import agentaudit, bfclaudit, dojoaudit, tau2audit
from scoring.datasets.checks import LabelReport, invariant_violations, label_report

BUILDERS: dict[str, Callable[[], list[AttributionTask]]] = {
    agentaudit.DATASET: agentaudit.build,
    tau2audit.DATASET: tau2audit.build,
    bfclaudit.DATASET: bfclaudit.build,
    dojoaudit.DATASET: dojoaudit.build,
}


def build_dataset(name: str) -> list[AttributionTask]:
    """Build a registered dataset (deterministic: same seed, same tasks)."""
    if name not in BUILDERS:
        raise InputError(
            f"unknown dataset {name!r}",
            field="dataset",
            hint=f"choose one of {', '.join(BUILDERS)} or give a .jsonl path",
        )
    return BUILDERS[name]()


def write_jsonl(tasks: list[AttributionTask], path: Path) -> None:
    """Write atomically: a half-written dataset file never replaces a good one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text("".join(t.model_dump_json() + "\n" for t in tasks))
    tmp.replace(path)


def read_jsonl(path: Path) -> list[AttributionTask]:
    """Read and validate a dataset file; the first bad line stops the read with its location."""
    tasks = []
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise InputError(f"cannot read dataset: {exc.strerror}", path=str(path)) from exc
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            tasks.append(AttributionTask.model_validate(json.loads(line)))
        except json.JSONDecodeError as exc:
            raise InputError(f"not JSON: {exc.msg}", path=str(path), line=lineno, offset=exc.colno) from exc
        except ValidationError as exc:
            err = exc.errors()[0]
            raise InputError(
                err["msg"], path=str(path), line=lineno, field=".".join(str(p) for p in err["loc"]) or None
            ) from exc
    return tasks


def load_dataset(name_or_path: str) -> list[AttributionTask]:
    """A registered name builds the dataset; anything ending in .jsonl is read from disk."""
    if name_or_path.endswith(".jsonl"):
        return read_jsonl(Path(name_or_path))
    return build_dataset(name_or_path)


__all__ = [
    "BUILDERS",
    "LabelReport",
    "build_dataset",
    "invariant_violations",
    "label_report",
    "load_dataset",
    "read_jsonl",
    "write_jsonl",
]

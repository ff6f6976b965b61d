"""The reports `auditor review` files for a fixed corpus, kept as golden files.

The review path is tuned for memory (steps held lean, a compact interaction graph, digests
hashed as they are written): that work must leave every report byte-identical, findings,
evidence, trace and graph digests alike. The golden files (gzipped JSON text) were written by the review path as
it stood before that work; ``tests/test_review_memory.py`` compares today's reports with them.

The corpus: the shipped examples (every graph mode, and with a policy), the MAST derived traces,
every sixth Who&When file, the real framework logs and ingest fixtures under ``tests/fixtures``,
and two generated traces of the benchmarks (provenance-heavy and chatter-heavy).

When a detector or the report contract changes on purpose, regenerate from that checkout:

    python -m tests.review_golden
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import DATA, REPO

GOLDEN = Path(__file__).resolve().parent / "fixtures" / "review_golden"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SYNTHETIC_STEPS = 3000


@dataclass(frozen=True)
class Case:
    """One review: an input file (or a generated trace), the graph mode and the policy."""

    name: str
    path: Path | None = None
    generate: str | None = None  # "embedded" or "dense": a benchmark trace of SYNTHETIC_STEPS
    mode: str = "annotated"
    policy: Path | None = None


def corpus() -> list[Case]:
    example = REPO / "examples" / "renewal_drift.jsonl"
    incident = REPO / "examples" / "incidents" / "airline-task041-trial0.json"
    cases = [Case(f"example-{mode}", example, mode=mode) for mode in ("annotated", "topology", "none")]
    cases += [
        Case("incident-airline", incident),
        Case("incident-airline-policy", incident, policy=REPO / "examples" / "policies" / "airline.yaml"),
        Case("generated-embedded", generate="embedded"),
        Case("generated-dense", generate="dense"),
    ]
    for path in sorted((DATA / "mast" / "derived" / "traces").glob("*")):
        cases.append(Case(f"mast-{path.name}", path))
    for path in sorted((DATA / "whowhen").glob("*/*.json"))[::6]:
        cases.append(Case(f"whowhen-{path.parent.name}-{path.name}", path))
    for folder in ("real", "ingest"):
        for path in sorted((FIXTURES / folder).rglob("*")):
            if (path.parent.parent / "base_state.json").is_file():
                continue  # one event of a persisted conversation: reviewed with its base_state.json
            if path.suffix in (".json", ".jsonl", ".log", ".traj") and path.name != "expected_counts.json":
                cases.append(Case(f"{folder}-{path.relative_to(FIXTURES / folder)}".replace("/", "-"), path))
    return cases


def _generated(kind: str, folder: Path) -> Path:
    """A benchmark trace written as canonical JSONL (the benchmarks build them deterministically)."""
    import importlib
    import sys

    from ingest.canonical import write_canonical

    bench = str(REPO / "benchmarks")
    if bench not in sys.path:
        sys.path.insert(0, bench)
    module, name = {
        "embedded": ("render_bench", "embedded_trace"),
        "dense": ("graph_bench", "synthetic_trace"),
    }[kind]
    trace = getattr(importlib.import_module(module), name)(SYNTHETIC_STEPS)
    path = folder / f"{kind}.jsonl"
    with path.open("w", encoding="utf-8") as out:
        write_canonical(trace.header, trace.steps, out)
    return path


def review_text(case: Case, folder: Path) -> str:
    """The reports and validations of one case as `auditor review` files them into a fresh SQLite
    store, as JSON text; ``created_at`` (the wall clock) is blanked, nothing else is touched."""
    from auditor.audit.policy import load_policy
    from auditor.audit.review import review_file
    from auditor.core.store import EventStore

    inputs = folder / "input"
    inputs.mkdir()
    if case.generate is not None:
        path = _generated(case.generate, inputs)
    elif case.path is not None and case.path.name == "base_state.json":  # a conversation: its folder
        path = inputs / case.path.parent.name / case.path.name
        shutil.copytree(case.path.parent, path.parent)
    else:
        assert case.path is not None
        path = inputs / case.path.name
        shutil.copyfile(case.path, path)
    store = EventStore(f"sqlite:///{folder / 'golden.db'}")
    here = Path.cwd()
    os.chdir(folder)  # importers name the file in the trace header: as "input/NAME", wherever it lies
    try:
        outcomes = review_file(
            store,
            path.relative_to(folder),
            mode=case.mode,
            policy=load_policy(case.policy) if case.policy else None,
        )
    finally:
        os.chdir(here)
        store.engine.dispose()
    parts = []
    for o in outcomes:
        parts.append(o.report.model_copy(update={"created_at": ""}).model_dump_json(indent=2))
        parts.append(json.dumps(o.validation.to_dict(), indent=2, sort_keys=True))
    return "\n".join(parts) + "\n"


def golden_path(case: Case) -> Path:
    return GOLDEN / f"{case.name}.json.gz"


def read_golden(case: Case) -> str:
    return gzip.decompress(golden_path(case).read_bytes()).decode("utf-8")


def main(select: Callable[[Case], bool] = lambda case: True) -> None:
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for case in corpus():
        if not select(case):
            continue
        with tempfile.TemporaryDirectory(prefix="review-golden-") as tmp:
            text = review_text(case, Path(tmp))
        golden_path(case).write_bytes(gzip.compress(text.encode("utf-8"), mtime=0))
        print(f"wrote {golden_path(case).relative_to(REPO)}")


if __name__ == "__main__":
    main()

"""Shared set-up for the server tests: a real store seeded with real traces (imported and audited
through the same path as `auditor review`), a hostile trace, a real repair, and tokens."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from auditor.audit.review import review_file
from auditor.core.store import EventStore, open_store
from auditor.surfaces.server.tokens import create_token
from tests.conftest import DATA

REAL_TRACES = [
    DATA / "whowhen" / "algorithm-generated" / "87.json",  # AG2, an unverified-relay finding
    DATA / "whowhen" / "hand-crafted" / "46.json",  # Magentic-One, an information-state drift finding
    DATA / "whowhen" / "hand-crafted" / "13.json",  # Magentic-One, no findings
    DATA / "mast" / "derived" / "traces" / "02_Round1_AG2_GSM-Plus.json",  # MAST AG2 log
]
HOSTILE_ID = "hostile-markup"
PAYLOADS = [
    "<script>document.title='PWNED';window.__pwned=1</script>",
    '<img src=x onerror="window.__pwned=1">',
    "</pre><b id=injected>bold</b><iframe src=javascript:alert(1)></iframe>",
]


def hostile_trace(folder: Path) -> Path:
    """A canonical trace whose every text field carries markup and script."""
    header = {
        "record": "header",
        "trace_id": HOSTILE_ID,
        "source": "<script>window.__pwned=1</script>",
        "framework": "<b>handwritten</b>",
        "task": PAYLOADS[0],
    }
    steps = [
        {
            "record": "step",
            "step_id": f"h{i}",
            "index": i,
            "actor": f"agent<i>{i}</i>",
            "recipients": ["<u>bob</u>"],
            "kind": "message",
            "content": f"step {i}: {payload}",
        }
        for i, payload in enumerate(PAYLOADS)
    ]
    path = folder / "hostile.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [header, *steps]) + "\n")
    return path


@dataclass
class Seeded:
    store: EventStore
    tokens: dict[str, str] = field(default_factory=dict)
    reports: dict[str, str] = field(default_factory=dict)  # trace id -> report id
    sources: dict[str, str] = field(default_factory=dict)  # trace id -> file name
    repair_id: str | None = None


def seed(store: EventStore, folder: Path, with_repair: bool = False) -> Seeded:
    seeded = Seeded(store)
    for path in [*REAL_TRACES, hostile_trace(folder)]:
        for outcome in review_file(store, path):
            seeded.reports[outcome.trace.header.trace_id] = outcome.report.report_id
            seeded.sources[outcome.trace.header.trace_id] = path.name
    if with_repair:
        from repair.pipeline import run_world
        from repair.retest import RetestPlan

        seeded.repair_id = run_world(
            store, "D1", folder / "configs", audit_episodes=4, retest=RetestPlan(4, 10_000)
        ).repair_id
    for name, scopes in {
        "reader": ["read"],
        "ingester": ["ingest"],
        "repairer": ["read", "repair"],
        "all": ["read", "ingest", "repair"],
    }.items():
        seeded.tokens[name] = create_token(store, name, scopes)[0]
    return seeded


def seeded_sqlite(folder: Path) -> Iterator[Seeded]:
    """A SQLite store in ``folder``, seeded with a repair too, for a module's tests (a generator
    for a module-scoped fixture to delegate to); closed afterwards."""
    store = open_store(f"sqlite:///{folder / 'auditor.db'}")
    try:
        yield seed(store, folder, with_repair=True)
    finally:
        store.close()

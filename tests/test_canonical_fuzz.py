"""Fuzz the canonical JSONL reader: any bytes give a trace or a clear InputError, nothing else."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.core.errors import InputError
from ingest.canonical import iter_canonical, scan_canonical

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=10,
)
step_like = st.fixed_dictionaries(
    {"step_id": st.text(max_size=6), "index": st.integers(-1, 3), "actor": st.text(max_size=6)},
    optional={"content": st.text(max_size=30), "recipients": json_values, "kind": st.text(max_size=12)},
)


def _check(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "t.jsonl"
        path.write_bytes(data)
        try:
            scan = scan_canonical(path)
        except InputError as exc:
            assert str(path) in str(exc)
            return
        assert sum(1 for _ in iter_canonical(path)) == scan.steps > 0


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300))
def test_random_bytes(data: bytes) -> None:
    _check(data)


@settings(max_examples=300, deadline=None)
@given(st.lists(step_like | json_values, min_size=0, max_size=5))
def test_json_lines(records: list) -> None:
    _check("\n".join(json.dumps(r) for r in records).encode())

"""Hostile inputs (issue 22, items 4, 8 and 9): each is refused with one line (CLI, exit 2) or an
HTTP 400 that names the file, line and field or the parameter, or it is kept exactly as written,
as docs/input.md says for each. The inputs are the repository's example trace and a real Who&When
record, changed as an attacker or a careless user would: JSON no encoder writes (NaN, a repeated
key, 10,000 brackets) is spliced into their text. After every case the hash chain verifies and no
trace stored before it has changed; a refused input stores nothing.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.core.errors import InputError
from auditor.core.store import EventStore, open_store, verify_chain
from ingest.canonical import iter_canonical, scan_canonical, write_canonical
from ingest.registry import open_traces
from schemas.events import trace_stream
from schemas.trace import TraceHeader, TraceStep
from tests.cli_helpers import run
from tests.conftest import DATA, REPO

EXAMPLE = REPO / "examples" / "renewal_drift.jsonl"
EXAMPLE_ID = "example-renewal-drift"
WHOWHEN = DATA / "whowhen" / "hand-crafted" / "46.json"  # 174 KB: most of it past the 64 KiB head
WHOWHEN_CANONICAL_LINES = 131  # its header and 130 steps
DEEP = "[" * 10_000 + "]" * 10_000

pytestmark = pytest.mark.slow  # CLI subprocesses and audits


# -- inputs ------------------------------------------------------------------------------------------


def _records(trace_id: str) -> list[dict]:
    """The example's header and steps, the header naming ``trace_id`` (a new trace, not a clash)."""
    records = [json.loads(line) for line in EXAMPLE.read_text().splitlines()]
    records[0]["trace_id"] = trace_id
    return records


def _splice(records: list[dict], line: int, pair: str, inside: str | None = None, instead: str = "") -> str:
    """The records as JSON lines, with ``pair`` (raw JSON text: a key and a value) added to the
    object of line ``line`` (in place of its member ``instead``) or to its member object ``inside``."""
    records[line - 1].pop(instead, None)
    lines = [json.dumps(r) for r in records]
    if inside is None:
        lines[line - 1] = lines[line - 1][:-1] + ", " + pair + "}"
    else:
        records = [dict(r) for r in records]
        records[line - 1][inside] = {"slot": 0}
        lines[line - 1] = json.dumps(records[line - 1]).replace('{"slot": 0}', "{" + pair + "}")
    return "\n".join(lines) + "\n"


def _whowhen(pair: str) -> str:
    """The real Who&When record with ``pair`` added at its end, past the detection head."""
    text = WHOWHEN.read_text()
    assert text.rstrip().endswith("}") and len(text.encode()) > 2 * 64 * 1024
    return text.rstrip()[:-1] + ", " + pair + "}"


def _whowhen_canonical(folder: Path, last_raw: str) -> str:
    """The Who&When record written in the canonical form (131 lines, past the 64 KiB head before the last), its last step's
    ``raw`` replaced by ``last_raw`` (raw JSON text)."""
    (imported,) = open_traces(WHOWHEN)
    out = folder / "ww.canonical.jsonl"
    with out.open("w") as handle:
        write_canonical(imported.header, imported.steps(), handle)
    lines = out.read_text().splitlines()
    assert len(lines) == WHOWHEN_CANONICAL_LINES and len("\n".join(lines[:-1]).encode()) > 64 * 1024
    last = json.loads(lines[-1])
    last["raw"] = {"slot": 0}
    lines[-1] = json.dumps(last).replace('{"slot": 0}', last_raw)
    return "\n".join(lines) + "\n"


def _set(line: int, key: str, value: object) -> Callable[[list[dict]], list[dict]]:
    def edit(records: list[dict]) -> list[dict]:
        records[line - 1][key] = value
        return records

    return edit


@dataclass(frozen=True)
class Refused:
    """A hostile input and how its refusal must read: ``line`` and ``field`` as the error names
    them (None: not named), ``says`` a phrase of the message."""

    name: str
    text: Callable[[Path], str]
    says: str
    line: int | None = None
    field: str | None = None
    suffix: str = ".jsonl"


def _example(name: str, edit: Callable[[list[dict]], list[dict]]) -> Callable[[Path], str]:
    return lambda _folder: "".join(json.dumps(r) + "\n" for r in edit(_records(f"hostile-{name}")))


def _spliced(
    name: str, line: int, pair: str, inside: str | None = None, instead: str = ""
) -> Callable[[Path], str]:
    return lambda _folder: _splice(_records(f"hostile-{name}"), line, pair, inside, instead)


NESTED_TOO_DEEP = "nested deeper than 200 levels"
REFUSED = [
    # item 4: tracebacks before
    # (in the detection head, before any importer: line and byte, no field)
    Refused("deep-array", lambda _f: DEEP + "\n", NESTED_TOO_DEEP, 1),
    Refused("deep-array-json", lambda _f: DEEP, NESTED_TOO_DEEP, 1, suffix=".json"),
    Refused("deep-step", _spliced("deep-step", 3, f'"deep": {DEEP}', inside="raw"), NESTED_TOO_DEEP, 3),
    Refused(
        "deep-past-head",
        lambda f: _whowhen_canonical(f, '{"deep": ' + "[" * 250 + "]" * 250 + "}"),
        NESTED_TOO_DEEP,
        line=WHOWHEN_CANONICAL_LINES,
        field="raw.deep.0.0.0.0.0.0.…",
    ),
    Refused("deep-whowhen", lambda _f: _whowhen(f'"hostile": {DEEP}'), "nested too deeply", suffix=".json"),
    Refused(
        "digits-whowhen", lambda _f: _whowhen('"hostile": ' + "9" * 5000), "4,300 digits", suffix=".json"
    ),
    Refused(
        "version-text",
        _example("v1", _set(1, "format_version", "abc")),
        "not a format version",
        1,
        "format_version",
    ),
    Refused(
        "version-zero",
        _example("v2", _set(1, "format_version", 0)),
        "not a format version",
        1,
        "format_version",
    ),
    Refused(
        "version-1e400",
        _spliced("v3", 1, '"format_version": 1e400', instead="format_version"),
        "64-bit float",
        1,
        "format_version",
    ),
    Refused(
        "version-digits",
        _spliced("v4", 1, '"format_version": ' + "9" * 5000, instead="format_version"),
        "5,000 digits",
        1,
    ),
    Refused("index-digits", _example("ix", _set(3, "index", int("9" * 4000))), "out of order", 3, "index"),
    Refused(
        "index-5000-digits",
        _spliced("ix5", 3, '"index": ' + "9" * 5000, instead="index"),
        "5,000 digits",
        3,
    ),
    # item 8: ids
    Refused(
        "id-100kb", _example("long", _set(1, "trace_id", "x" * 100_000)), "100,000 characters", 1, "trace_id"
    ),
    Refused("id-slash", _example("slash", _set(1, "trace_id", "team/run-7")), "holds '/'", 1, "trace_id"),
    Refused("id-dots", _example("dots", _set(1, "trace_id", "..")), "path step", 1, "trace_id"),
    Refused("id-space", _example("space", _set(1, "trace_id", "run 7")), "holds ' '", 1, "trace_id"),
    Refused("id-markup", _example("markup", _set(1, "trace_id", "run[bold]7")), "holds '['", 1, "trace_id"),
    Refused("id-bidi", _example("bidi", _set(1, "trace_id", "run\u202e7")), "holds '\\u202e'", 1, "trace_id"),
    Refused(
        "step-id-long", _example("sid", _set(3, "step_id", "s" * 201)), "at most 200 characters", 3, "step_id"
    ),
    # item 9: silent changes before
    Refused(
        "nan", _spliced("nan", 4, '"score": NaN', inside="raw"), "NaN is not a JSON number", 4, "raw.score"
    ),
    Refused(
        "infinity", _spliced("inf", 4, '"score": -Infinity', inside="raw"), "-Infinity is not", 4, "raw.score"
    ),
    Refused("1e400", _spliced("big", 4, '"score": 1e400', inside="raw"), "64-bit float", 4, "raw.score"),
    Refused(
        "repeated-key", _spliced("dup", 3, '"content": "approved after all"'), "more than once", 3, "content"
    ),
    Refused(
        "repeated-nested-key",
        _spliced("dup2", 3, '"id": 1, "id": 2', inside="raw"),
        "more than once",
        3,
        "raw.id",
    ),
    Refused(
        "not-a-time",
        _example("ts", _set(5, "timestamp", "not a time")),
        "not an ISO 8601 time",
        5,
        "timestamp",
    ),
    Refused(
        "time-before-utc",
        _example("ts2", _set(5, "timestamp", "0001-01-01T00:00:00+14:00")),
        "UTC equivalent",
        5,
        "timestamp",
    ),
    Refused("nul-actor", _example("nul", _set(4, "actor", "pricing\u0000tool")), "NUL", 4, "actor"),
    Refused("nul-task", _example("nul2", _set(1, "task", "renew\u0000")), "NUL", 1, "task"),
    Refused(
        "repeated-whowhen", lambda _f: _whowhen('"question": "injected"'), "more than once", suffix=".json"
    ),
]


# -- what must not change ----------------------------------------------------------------------------

Snapshot = tuple[int, dict[str, list[str]]]


def _snapshot(store: EventStore) -> Snapshot:
    """The head position and the hash of every event of every stored trace."""
    streams = store.list_streams("trace-")
    return store.last_position(), {s: [e.hash for e in store.read_stream(s)] for s in streams}


def _unchanged(store: EventStore, before: Snapshot, *, stored_nothing: bool = True) -> None:
    position, streams = before
    if stored_nothing:
        assert store.last_position() == position
    assert {s: [e.hash for e in store.read_stream(s)] for s in streams} == streams
    assert verify_chain(store).ok


def cli_store(folder: Path) -> contextlib.closing[EventStore]:
    """The store the CLI opens in ``folder`` (./auditor.db), opened for a check and closed after."""
    return contextlib.closing(open_store(f"sqlite:///{folder / 'auditor.db'}"))


def cli_unchanged(folder: Path, before: Snapshot, *, stored_nothing: bool = True) -> Snapshot:
    """``_unchanged`` on the CLI's store in ``folder``, and `auditor store verify` says intact;
    returns the snapshot to hold the next case against."""
    with cli_store(folder) as store:
        _unchanged(store, before, stored_nothing=stored_nothing)
        after = _snapshot(store)
    verify = run(["store", "verify"], folder)
    assert verify.returncode == 0 and "hash chain intact" in verify.stdout, verify.stdout + verify.stderr
    return after


def _seed(store: EventStore) -> EventStore:
    """The store holding the example and a real Who&When trace before any hostile input."""
    from ingest import ingest_path

    ingest_path(store, EXAMPLE)
    ingest_path(store, DATA / "whowhen" / "algorithm-generated" / "87.json")
    return store


@pytest.fixture
def seeded(store: EventStore) -> EventStore:
    return _seed(store)


def _one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr[-2000:]
    assert "Traceback" not in stderr
    return lines[0]


# -- the CLI -----------------------------------------------------------------------------------------


@pytest.fixture
def seeded_sqlite(sqlite_store: EventStore) -> EventStore:
    """The seeded store on SQLite only: the refusal matrix fails before any write, so one engine
    shows that nothing is stored (the store-touching cases below run on both)."""
    return _seed(sqlite_store)


@pytest.mark.parametrize("case", REFUSED, ids=lambda c: c.name)
def test_cli_refuses_with_one_line(case: Refused, seeded_sqlite: EventStore, tmp_path: Path) -> None:
    path = tmp_path / f"{case.name}{case.suffix}"
    path.write_text(case.text(tmp_path))
    before = _snapshot(seeded_sqlite)
    out = run(["--store", f"sqlite:///{tmp_path / 'auditor.db'}", "ingest", str(path)], tmp_path)
    assert out.returncode == 2, out.stderr[-2000:]
    line = _one_line(out.stderr)
    assert case.says in line and line.startswith(f"error: {path}")
    if case.line is not None:
        assert f", line {case.line}" in line
    if case.field is not None:
        assert f"field '{case.field}'" in line
    assert len(line) < 1000  # a 100 KB id or a 5,000-digit number is quoted cut (rich took 70 s on it)
    _unchanged(seeded_sqlite, before)


def test_cli_trace_id_option_follows_the_id_rule(seeded: EventStore, store_url: str, tmp_path: Path) -> None:
    before = _snapshot(seeded)
    for bad, says in [("team/run-7", "holds '/'"), ("x" * 201, "201 characters"), ("..", "path step")]:
        out = run(["--store", store_url, "ingest", str(EXAMPLE), "--trace-id", bad], tmp_path)
        assert out.returncode == 2
        line = _one_line(out.stderr)
        assert "field '--trace-id'" in line and says in line
        _unchanged(seeded, before)


def test_cli_refuses_an_id_an_importer_derives(seeded: EventStore, store_url: str, tmp_path: Path) -> None:
    """A real AI SDK span export whose trace id holds '/': the importer names the trace after it."""
    real = REPO / "tests" / "fixtures" / "real" / "vercel-ai" / "ai_sdk_tool_run.json"
    path = tmp_path / "spans.json"
    path.write_text(real.read_text().replace("02a1d85c783b0c2eb2829f90b55362ff", "team/run-7"))
    before = _snapshot(seeded)
    out = run(["--store", store_url, "ingest", str(path)], tmp_path)
    _unchanged(seeded, before)
    assert out.returncode == 2
    assert "field 'trace_id'" in _one_line(out.stderr)


# -- the canonical reader's two paths agree ---------------------------------------------------------


class Pairs(list):
    """A JSON object as written: its key-value pairs in order, a key possibly more than once."""


_keys = st.text(alphabet=["a", ":", '"', "\\", "é", " ", "{", "}", "\n", "\u2028"], max_size=4)
_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), _keys
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.lists(st.tuples(_keys, inner), max_size=3).map(Pairs),
    max_leaves=12,
)


def _text(value: object, ascii_only: bool) -> str:
    if isinstance(value, Pairs):
        return (
            "{"
            + ", ".join(f"{json.dumps(k, ensure_ascii=ascii_only)}: {_text(v, ascii_only)}" for k, v in value)
            + "}"
        )
    if isinstance(value, list):
        return "[" + ", ".join(_text(v, ascii_only) for v in value) + "]"
    return json.dumps(value, ensure_ascii=ascii_only)


def _repeats(value: object) -> bool:
    if isinstance(value, Pairs):
        keys = [k for k, _ in value]
        return len(set(keys)) < len(keys) or any(_repeats(v) for _, v in value)
    return isinstance(value, list) and any(_repeats(v) for v in value)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    raw=st.lists(st.tuples(_keys, _values), max_size=4).map(Pairs),
    arguments=_values,
    ascii_only=st.booleans(),
)
def test_a_repeated_key_at_any_depth_is_refused_and_nothing_else(
    tmp_path: Path, raw: Pairs, arguments: object, ascii_only: bool
) -> None:
    """The fast parse keeps the last of repeated keys and only counting proves it did not meet
    one: a line is refused exactly when some object of it repeats a key, and otherwise reads as
    the standard decoder reads it."""
    step = json.loads(EXAMPLE.read_text().splitlines()[2])  # a real tool call
    step["index"] = 0
    tool = {"name": step["tool"]["name"], "call_id": step["tool"]["call_id"]}
    fields = {k: v for k, v in step.items() if k not in ("tool", "raw")}
    line = json.dumps(fields, ensure_ascii=ascii_only)[:-1]
    line += f', "tool": {json.dumps(tool, ensure_ascii=ascii_only)[:-1]}'
    line += f', "arguments": {_text(Pairs([("query", arguments)]), ascii_only)}}}'
    line += f', "raw": {_text(raw, ascii_only)}}}'
    path = tmp_path / "one.jsonl"
    path.write_text(line + "\n")
    if _repeats(raw) or _repeats(arguments):
        with pytest.raises(InputError, match="more than once"):
            scan_canonical(path)
        return
    scan_canonical(path)
    (read,) = iter_canonical(path)
    assert read == TraceStep.model_validate(json.loads(line))


def test_cli_keeps_what_it_accepts_as_written(seeded: EventStore, store_url: str, tmp_path: Path) -> None:
    """What docs/input.md says is kept: timestamps that run backwards (the index is the order), a
    NUL, 'NaN' and an escaped colon in content, one key name in different objects, the deepest
    nesting allowed. Each is read back from the store exactly."""
    from auditor.core.store.traces import load_trace

    records = _records("kept-as-written")
    records[2]["timestamp"], records[3]["timestamp"] = records[3]["timestamp"], records[2]["timestamp"]
    records[4]["content"] = "NaN\u0000 and Infinity: kept"
    records[6]["raw"] = {"name": "crm", "tool": {"name": "crm.update_opportunity"}}
    text = "".join(json.dumps(r) + "\n" for r in records)
    text = text.replace("and Infinity: kept", "and Infinity\\u003a kept")
    deep = '{"x": ' + "[" * 198 + "]" * 198 + "}"  # the line, raw and 198 arrays: 200 levels
    text = text.replace('"raw": {}}\n', f'"raw": {deep}}}\n', 1)
    path = tmp_path / "kept.jsonl"
    path.write_text(text)
    before = _snapshot(seeded)
    out = run(["--store", store_url, "ingest", str(path)], tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    stored = load_trace(seeded, "kept-as-written")
    written = [TraceStep.model_validate_json(line) for line in text.splitlines()[1:]]
    assert stored.steps == written
    stamps = [s.timestamp for s in stored.steps]
    assert stamps[1] > stamps[2]  # as written, not reordered
    assert stored.steps[3].content == "NaN\x00 and Infinity: kept"
    _unchanged(seeded, before, stored_nothing=False)


def test_cli_reviews_json_nested_past_the_decoder_inside_step_text(
    seeded: EventStore, store_url: str, tmp_path: Path
) -> None:
    """A tool result, a tool call's arguments and a Python mapping's repr whose text nests 10,000
    brackets deep: text a detector or an importer decodes as JSON (Python's decoder raises
    RecursionError there, no ValueError). The run is reviewed, each text kept as written, and the
    report validates: a hostile tool output is audited, never a traceback."""
    from auditor.core.store.traces import load_trace

    messages = [
        {
            "role": "user",
            "content": "Find the restaurant with the best rating and book a table there, please.",
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_ratings", "arguments": DEEP}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '{"Le Bistro": ' + DEEP + "}"},
        {"role": "tool", "tool_call_id": "c1", "content": "{'Le Bistro': " + DEEP + "}"},
        {"role": "tool", "tool_call_id": "c1", "content": '{"error": ' + DEEP + "}"},
        {"role": "assistant", "content": "The best-rated restaurant is Le Bistro."},
    ]
    path = tmp_path / "deep-text.json"
    path.write_text(json.dumps({"messages": messages}))
    out = run(
        [
            "--store",
            store_url,
            "review",
            str(path),
            "--input-format",
            "openai-chat",
            "--trace-id",
            "deep-text",
        ],
        tmp_path,
    )
    assert out.returncode in (0, 1), out.stderr[-2000:]  # 1: a finding, as review documents
    assert "Traceback" not in out.stderr and "validated: schema ok" in out.stdout
    stored = load_trace(seeded, "deep-text")
    assert [s.content for s in stored.steps if s.kind.value == "tool_result"] == [
        m["content"] for m in messages[2:5]
    ]
    assert stored.steps[1].tool is not None and stored.steps[1].tool.arguments == DEEP


# -- the API -----------------------------------------------------------------------------------------


@dataclass
class Served:
    client: object
    headers: dict[str, str]
    store: EventStore
    report_trace: str


@pytest.fixture
def served(seeded: EventStore) -> Iterator[Served]:
    """The real server over the seeded store, with one audited trace (so reports list)."""
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from auditor.audit.review import review_file
    from auditor.surfaces.server import ServerConfig, create_app
    from auditor.surfaces.server.tokens import create_token

    (outcome,) = review_file(seeded, EXAMPLE)
    token = create_token(seeded, "hostile", ["read", "ingest"])[0]
    with TestClient(create_app(ServerConfig(), store=seeded)) as client:
        yield Served(client, {"Authorization": f"Bearer {token}"}, seeded, outcome.trace.header.trace_id)


def _problem(response, status: int = 400) -> str:  # type: ignore[no-untyped-def]
    assert response.status_code == status, response.text[:2000]
    assert response.headers["content-type"] == "application/problem+json"
    return response.json()["detail"]


def test_api_audit_refuses_hostile_bodies(served: Served, tmp_path: Path) -> None:
    for case in REFUSED:
        before = _snapshot(served.store)
        name = f"{case.name}{case.suffix}"
        r = served.client.post(  # type: ignore[attr-defined]
            "/api/audit",
            params={"filename": name},
            content=case.text(tmp_path).encode(),
            headers=served.headers,
        )
        detail = _problem(r)
        assert detail.startswith(name) and case.says in detail, (case.name, detail)
        if case.line is not None:
            assert f", line {case.line}" in detail, (case.name, detail)
        if case.field is not None:
            assert f"field '{case.field}'" in detail, (case.name, detail)
        _unchanged(served.store, before)
    r = served.client.post(  # type: ignore[attr-defined]
        "/api/audit", params={"trace_id": "team/run-7"}, content=EXAMPLE.read_bytes(), headers=served.headers
    )
    assert "holds '/'" in _problem(r)


def test_api_read_parameters_are_400s(served: Served) -> None:
    steps = f"/api/traces/{served.report_trace}/steps"
    before = _snapshot(served.store)
    for path in ("/api/traces", "/api/reports", steps):
        for huge in ("9223372036854775808", "9223372036854775807", "2147483648"):
            detail = _problem(served.client.get(path, params={"offset": huge}, headers=served.headers))  # type: ignore[attr-defined]
            assert detail.startswith("query parameter 'offset'"), detail
        edge = served.client.get(path, params={"offset": 2**31 - 1}, headers=served.headers)  # type: ignore[attr-defined]
        assert edge.status_code == 200, edge.text
    for name, value in [("since", "0001-01-01T00:00:00+14:00"), ("until", "9999-12-31T23:59:59-14:00")]:
        detail = _problem(served.client.get("/api/traces", params={name: value}, headers=served.headers))  # type: ignore[attr-defined]
        assert detail.startswith(f"query parameter '{name}'") and "UTC" in detail
    for name in ("source", "text", "participant", "framework"):
        detail = _problem(served.client.get("/api/traces", params={name: "\x00"}, headers=served.headers))  # type: ignore[attr-defined]
        assert detail.startswith(f"query parameter '{name}' holds a NUL"), detail
    assert "NUL" in _problem(
        served.client.get("/api/reports", params={"trace_id": "a\x00"}, headers=served.headers)
    )  # type: ignore[attr-defined]
    for path in ("/api/traces/a%00b", "/api/traces/a%00b/steps", "/api/reports/a%00b"):
        assert "NUL" in _problem(served.client.get(path, headers=served.headers))  # type: ignore[attr-defined]
    everything = served.client.get("/api/traces", headers=served.headers).json()["total"]  # type: ignore[attr-defined]
    assert everything == 2
    _unchanged(served.store, before)


def test_api_report_events_after_a_huge_position_is_a_400(served: Served) -> None:
    before = _snapshot(served.store)
    r = served.client.get(
        "/api/events/reports", params={"after": "99999999999999999999", "limit": 1}, headers=served.headers
    )  # type: ignore[attr-defined]
    assert "query parameter 'after'" in _problem(r)
    _unchanged(served.store, before)


def test_api_every_accepted_id_opens(served: Served) -> None:
    """An id the rule accepts is reachable by its URL (one with '/' never was); an id that only
    looks hostile to HTML is data like any other."""
    trace_id = "run:7@host+x=1~<b>&é"
    TraceHeader(trace_id=trace_id)  # the contract accepts it
    before = _snapshot(served.store)
    r = served.client.post(
        "/api/audit", params={"trace_id": trace_id}, content=EXAMPLE.read_bytes(), headers=served.headers
    )  # type: ignore[attr-defined]
    assert r.status_code == 201, r.text
    assert served.store.stream_version(trace_stream(trace_id)) == 9
    assert served.store.last_position() == before[0] + 9 + 1  # its events and its report, nothing else
    _unchanged(served.store, before, stored_nothing=False)  # the seeded traces as they were
    before = _snapshot(served.store)
    segment = quote(trace_id, safe="")
    summary = served.client.get(f"/api/traces/{segment}", headers=served.headers)  # type: ignore[attr-defined]
    assert summary.status_code == 200 and summary.json()["trace_id"] == trace_id
    page = served.client.get(f"/api/traces/{segment}/steps", headers=served.headers).json()  # type: ignore[attr-defined]
    assert page["trace_id"] == trace_id and len(page["steps"]) == 8
    _unchanged(served.store, before)  # reading it stored nothing

"""One trace id, one history; nothing half-written; input read once (issue 22, items 1, 3 and 7).

Real inputs only: the repository's example trace, Who&When and MAD records from the shared data,
copied into the test's folder and changed there as a careless or hostile user would (a verdict
word flipped, step ids renamed, a lone surrogate, a file rewritten between the passes). After each
test the hash chain verifies and no trace stored before the attempt has changed.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from auditor.audit.review import review_file
from auditor.core.errors import InputError, NotFoundError, TraceConflictError
from auditor.core.store import EventStore, verify_chain
from auditor.core.store.traces import ContentHash, load_trace, trace_digest
from ingest import ingest_path, open_traces
from schemas.events import trace_stream
from schemas.trace import Trace
from tests.cli_helpers import events_in, run, run_process
from tests.conftest import DATA, REPO
from tests.test_hostile_inputs import cli_store

EXAMPLE = REPO / "examples" / "renewal_drift.jsonl"
EXAMPLE_ID = "example-renewal-drift"
WHOWHEN = DATA / "whowhen" / "hand-crafted" / "46.json"
MAD = DATA / "mast" / "MAD_human_labelled_dataset.json"


# -- inputs ----------------------------------------------------------------------------------------


def _lines() -> list[dict]:
    return [json.loads(line) for line in EXAMPLE.read_text().splitlines()]


def _write(path: Path, records: list[dict]) -> Path:
    """JSON lines as any tool writes them (a lone surrogate stays a \\ud800 escape)."""
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _clash(folder: Path) -> Path:
    """The issue's reproduction: sed 's/approved/REJECTED/' on the example."""
    path = folder / "clash.jsonl"
    path.write_text(EXAMPLE.read_text().replace("approved", "REJECTED"))
    return path


def _new_step_ids(folder: Path) -> Path:
    records = _lines()
    for r in records[1:]:
        r["step_id"] = "n" + r["step_id"]
    return _write(folder / "new_ids.jsonl", records)


def _surrogate(folder: Path, trace_id: str, where: str = "content") -> Path:
    records = _lines()
    records[0]["trace_id"] = trace_id
    if where == "content":
        records[3]["content"] += " \ud800"
    else:
        records[3]["raw"] = {"note": {"k\udc00y": 1}}
    return _write(folder / f"{trace_id}.jsonl", records)


def _mad_corpus(path: Path, picks: list[int], edit: dict[int, dict] | None = None) -> Path:
    """A MAD corpus file of some of the real records; ``edit`` adds fields to a record (the
    importer keeps a record's other fields in the trace header)."""
    records = json.loads(MAD.read_text())
    chosen = [{**records[n], **(edit or {}).get(n, {})} for n in picks]
    path.write_text(json.dumps(chosen))
    return path


def _mad_ids(path: Path) -> list[str]:
    return [t.header.trace_id for t in open_traces(path, "mad")]


def _content_digest(trace: Trace) -> str:
    h = ContentHash(trace.header.model_dump(mode="json"), "test")
    for step in trace.steps:
        h.step(step.model_dump(mode="json"))
    return h.digest()


def _file_digest(path: Path) -> str:
    (imported,) = list(open_traces(path))
    return _content_digest(Trace(header=imported.header, steps=list(imported.steps())))


# -- what must not change ---------------------------------------------------------------------------


def _snapshot(store: EventStore) -> tuple[int, dict[str, str]]:
    """The head position and the digest of every stored trace."""
    ids = [s.removeprefix("trace-") for s in store.list_streams("trace-")]
    return store.last_position(), {tid: trace_digest(load_trace(store, tid)) for tid in ids}


def _unchanged(store: EventStore, before: tuple[int, dict[str, str]], appended: int = 0) -> None:
    position, digests = before
    assert store.last_position() == position + appended
    assert {tid: trace_digest(load_trace(store, tid)) for tid in digests} == digests
    assert verify_chain(store).ok


def _absent(store: EventStore, *trace_ids: str) -> None:
    for tid in trace_ids:
        assert store.stream_version(trace_stream(tid)) == 0
        with pytest.raises(NotFoundError):
            load_trace(store, tid)


# -- item 1: one trace id, one history -------------------------------------------------------------


def test_other_content_under_a_stored_id_is_refused_naming_both_digests(store, tmp_path: Path) -> None:
    (first,) = ingest_path(store, EXAMPLE)
    assert (first.steps, first.appended) == (8, 9)
    stored = _content_digest(load_trace(store, EXAMPLE_ID))
    before = _snapshot(store)
    for changed in (_clash(tmp_path), _new_step_ids(tmp_path)):
        with pytest.raises(TraceConflictError) as refused:
            ingest_path(store, changed)
        message = str(refused.value)
        assert f"stored {stored}" in message and f"this input {_file_digest(changed)}" in message
        assert message.startswith(str(changed))
        _unchanged(store, before)
    indexes = [s.index for s in load_trace(store, EXAMPLE_ID).steps]
    assert indexes == list(range(8))  # never 0, 0, 1, 1, …

    copy = tmp_path / "elsewhere" / "renewal_drift.jsonl"  # the same content by another path
    copy.parent.mkdir()
    copy.write_bytes(EXAMPLE.read_bytes())
    (again,) = ingest_path(store, copy)
    assert (again.appended, again.already_present) == (0, 9)
    _unchanged(store, before)

    (renamed,) = ingest_path(store, _clash(tmp_path), trace_id="renewal-rejected")
    assert (renamed.trace_id, renamed.appended) == ("renewal-rejected", 9)
    assert "REJECTED" in load_trace(store, "renewal-rejected").steps[0].content
    _unchanged(store, before, appended=9)


def test_a_report_is_computed_from_and_bound_to_the_stored_trace(store, tmp_path: Path) -> None:
    first, second = tmp_path / "first" / WHOWHEN.name, tmp_path / "second" / WHOWHEN.name
    for copy in (first, second):
        copy.parent.mkdir()
        copy.write_bytes(WHOWHEN.read_bytes())
    (original,) = review_file(store, first)
    before = _snapshot(store)
    (again,) = review_file(store, second)  # same content, another source path
    stored = load_trace(store, again.trace.header.trace_id)
    assert stored.header.source == str(first) and again.trace == stored
    assert again.report.trace_digest == trace_digest(stored) == original.report.trace_digest
    assert again.new_events == 0 and again.validation.ok
    _unchanged(store, before)  # its report is the one filed already: nothing new


def test_review_of_a_clash_files_no_report(store, tmp_path: Path) -> None:
    review_file(store, EXAMPLE)
    before = _snapshot(store)
    with pytest.raises(TraceConflictError):
        review_file(store, _clash(tmp_path))
    _unchanged(store, before)
    filed = [ev.payload["report"]["trace_id"] for ev in store.read_all(types=["ReportFiled"])]
    assert filed == [EXAMPLE_ID]
    (renamed,) = review_file(store, _clash(tmp_path), trace_id="renewal-rejected")
    assert renamed.report.trace_id == "renewal-rejected"
    assert renamed.report.trace_digest == trace_digest(load_trace(store, "renewal-rejected"))


def test_an_input_of_many_traces_is_one_transaction(store, tmp_path: Path) -> None:
    stored = _mad_corpus(tmp_path / "stored.json", [2, 4])
    assert [s.appended > 0 for s in ingest_path(store, stored, "mad")] == [True, True]
    before = _snapshot(store)
    new_id = _mad_ids(_mad_corpus(tmp_path / "probe.json", [7]))[0]

    conflict = _mad_corpus(tmp_path / "conflict.json", [7, 4], edit={4: {"note": "edited"}})
    with pytest.raises(TraceConflictError):
        ingest_path(store, conflict, "mad")
    _absent(store, new_id)  # the first trace of the input went with the second
    _unchanged(store, before)

    other = _mad_ids(_mad_corpus(tmp_path / "probe5.json", [5]))[0]
    clashing = tmp_path / "clashing.json"
    records = json.loads(_mad_corpus(tmp_path / "five.json", [5]).read_text())
    clashing.write_text(json.dumps([records[0], {**records[0], "note": "edited"}]))
    with pytest.raises(TraceConflictError, match="already stored with other content"):
        ingest_path(store, clashing, "mad")  # one id twice in one input, with two contents
    _absent(store, other)
    _unchanged(store, before)


# -- item 3: nothing half-written ------------------------------------------------------------------


def test_a_lone_surrogate_is_an_input_error_that_stores_nothing(store, tmp_path: Path) -> None:
    ingest_path(store, EXAMPLE)
    before = _snapshot(store)
    for trace_id, where, field in [("sur-content", "content", "content"), ("sur-key", "raw", "raw.note")]:
        path = _surrogate(tmp_path, trace_id, where)
        with pytest.raises(InputError) as bad:
            ingest_path(store, path)
        assert bad.value.path == str(path) and bad.value.field and bad.value.field.startswith(field)
        assert "lone surrogate" in str(bad.value) and "step 's02' (index 2)" in str(bad.value)
        str(bad.value).encode("utf-8")  # the message itself prints
        _absent(store, trace_id)
        _unchanged(store, before)

    corpus = _mad_corpus(tmp_path / "corpus.json", [7, 5], edit={5: {"note": "bad \ud800"}})
    with pytest.raises(InputError, match="the trace header holds text that is not Unicode") as bad:
        ingest_path(store, corpus, "mad")  # the second trace is bad: the first is not stored either
    assert bad.value.field == "metadata.note"
    _absent(store, *_mad_ids(_mad_corpus(tmp_path / "good.json", [7])))
    _unchanged(store, before)


@pytest.mark.parametrize("change", ["grown", "same size"])
def test_a_file_changed_between_check_and_write_stores_nothing(
    store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    """A writer changes the file right after the check pass: the write pass must not store what it
    reads then (the issue's 299,501 of 300,001 events, or a silent index gap)."""
    import ingest.pipeline as pipeline

    ingest_path(store, EXAMPLE)
    before = _snapshot(store)
    records = _lines()
    records[0]["trace_id"] = "changing"
    path = _write(tmp_path / "changing.jsonl", records)
    real_check = pipeline.check

    def check_then_a_writer(*args, **kwargs):  # type: ignore[no-untyped-def]
        kept = real_check(*args, **kwargs)
        if change == "grown":
            extra = dict(records[-1], step_id="s99", index=12)  # a gap the check never saw
            with path.open("a") as f:
                f.write(json.dumps(extra) + "\n")
        else:
            text = path.read_text()
            path.write_text(text.replace("approved", "APPROVED"))
            assert path.stat().st_size == len(text.encode())
        return kept

    monkeypatch.setattr(pipeline, "check", check_then_a_writer)
    with pytest.raises(InputError, match="changed while it was read: nothing was stored"):
        ingest_path(store, path)
    _absent(store, "changing")
    _unchanged(store, before)
    monkeypatch.setattr(pipeline, "check", real_check)
    if change == "grown":  # what the write pass would have stored: a gap in the indexes
        with pytest.raises(InputError, match="out of order"):
            ingest_path(store, path)
    else:  # once nothing writes to it, it is stored whole, as it now reads
        (stored,) = ingest_path(store, path)
        assert stored.appended == 9 and "APPROVED" in load_trace(store, "changing").steps[0].content


def test_recursive_ingest_reports_each_bad_file_and_goes_on(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "a_example.jsonl").write_bytes(EXAMPLE.read_bytes())
    _surrogate(folder, "b_surrogate")
    _clash(folder).rename(folder / "c_clash.jsonl")
    (folder / "d_whowhen.json").write_bytes(WHOWHEN.read_bytes())
    proc = run(["ingest", str(folder), "--recursive", "--json"], tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    out = json.loads(proc.stdout)
    assert (out["totals"]["files"], out["totals"]["imported"], out["totals"]["failures"]) == (4, 2, 2)
    reasons = {Path(f["path"]).name: f["reason"] for f in out["failures"]}
    assert (
        "field 'content'" in reasons["b_surrogate.jsonl"] and "lone surrogate" in reasons["b_surrogate.jsonl"]
    )
    assert "already stored with other content" in reasons["c_clash.jsonl"]
    assert reasons["c_clash.jsonl"].count("sha256:") == 2
    assert [Path(d["path"]).name for d in out["files"]] == ["a_example.jsonl", "d_whowhen.json"]
    assert events_in(tmp_path) == 9 + out["files"][1]["appended"] + 1  # + the Who&When labels
    assert run(["store", "verify"], tmp_path).returncode == 0


# -- the CLI and the API, as the issue reproduced them ---------------------------------------------


def test_cli_review_refuses_a_clash_and_takes_a_new_id(tmp_path: Path) -> None:
    a = run(["review", str(EXAMPLE), "-o", "a.json"], tmp_path)
    assert a.returncode in (0, 1), a.stderr
    events = events_in(tmp_path)
    clash = _clash(tmp_path)
    b = run(["review", str(clash), "-o", "b.json"], tmp_path)
    assert b.returncode == 2 and b.stderr.count("sha256:") == 2, b.stderr
    assert "Traceback" not in b.stderr and not (tmp_path / "b.json").exists()
    assert events_in(tmp_path) == events
    ids = run(["ingest", str(_new_step_ids(tmp_path))], tmp_path)
    assert ids.returncode == 2 and "already stored with other content" in ids.stderr
    assert events_in(tmp_path) == events
    assert run(["validate", "a.json", "--trace", str(EXAMPLE)], tmp_path).returncode == 0
    assert run(["validate", "a.json", "--trace", EXAMPLE_ID], tmp_path).returncode == 0

    renamed = run(["review", str(clash), "--trace-id", "renewal-rejected", "-o", "b.json"], tmp_path)
    assert renamed.returncode in (0, 1), renamed.stderr
    assert json.loads((tmp_path / "b.json").read_text())["trace_id"] == "renewal-rejected"
    assert run(["validate", "b.json", "--trace", "renewal-rejected"], tmp_path).returncode == 0
    again = run(["ingest", str(EXAMPLE), "--json"], tmp_path)
    assert again.returncode == 0 and json.loads(again.stdout)["appended"] == 0
    shown = json.loads(run(["traces", "show", EXAMPLE_ID, "--json"], tmp_path).stdout)
    assert [s["index"] for s in shown["steps"]] == list(range(8))
    assert all("REJECTED" not in s["content"] for s in shown["steps"])
    two = run(["ingest", str(tmp_path), "--recursive", "--trace-id", "x"], tmp_path)
    assert two.returncode == 2 and "--trace-id" in two.stderr
    assert run(["store", "verify"], tmp_path).returncode == 0


def test_cli_surrogate_is_one_line_and_stores_nothing(tmp_path: Path) -> None:
    path = _surrogate(tmp_path, "sur-cli")
    proc = run(["ingest", str(path)], tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"error: {path}, field 'content': step 's02' (index 2)")
    review = run(["review", str(path)], tmp_path)
    assert review.returncode == 2 and "lone surrogate" in review.stderr
    assert events_in(tmp_path) == 0 and run(["store", "verify"], tmp_path).returncode == 0


def test_api_conflict_is_409_and_surrogate_400_with_nothing_stored(tmp_path: Path) -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from auditor.core.store import open_store
    from auditor.surfaces.server import ServerConfig, create_app
    from auditor.surfaces.server.tokens import create_token

    store = open_store(f"sqlite:///{tmp_path / 'auditor.db'}")
    token = create_token(store, "ingester", ["ingest"])[0]
    h = {"Authorization": f"Bearer {token}"}
    try:
        with TestClient(create_app(ServerConfig(), store=store)) as client:

            def post(path: Path, **params: str):  # type: ignore[no-untyped-def]
                return client.post(
                    "/api/audit",
                    params={"filename": path.name, **params},
                    content=path.read_bytes(),
                    headers=h,
                )

            first = post(EXAMPLE)
            assert first.status_code == 201, first.text
            before = _snapshot(store)
            reports = len(list(store.read_all(types=["ReportFiled"])))
            refused = post(_clash(tmp_path))
            assert refused.status_code == 409, refused.text
            problem = refused.json()
            assert problem["type"] == "urn:auditor:problem:trace-conflict"
            assert problem["detail"].startswith("clash.jsonl:") and problem["detail"].count("sha256:") == 2
            assert "/tmp" not in problem["detail"]
            bad = post(_surrogate(tmp_path, "sur-api"))
            assert bad.status_code == 400 and "field 'content'" in bad.json()["detail"]
            _absent(store, "sur-api")
            _unchanged(store, before)
            assert len(list(store.read_all(types=["ReportFiled"]))) == reports
            same = post(EXAMPLE)
            assert same.status_code == 201 and same.json()["results"][0]["new_events"] == 0
            renamed = post(_clash(tmp_path), trace_id="renewal-rejected")
            assert (
                renamed.status_code == 201 and renamed.json()["results"][0]["trace_id"] == "renewal-rejected"
            )
            assert verify_chain(store).ok
    finally:
        store.close()


# -- item 7: a pipe or FIFO is read once -----------------------------------------------------------


def _feed_fifo(path: Path, data: bytes) -> threading.Thread:
    """A writer on the other end of a FIFO: it writes once, as a pipe does, and closes."""

    def write() -> None:
        with path.open("wb") as f:
            f.write(data)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def _cli_case(
    folder: Path, before: tuple[int, dict[str, str]], appended: int = 0
) -> tuple[int, dict[str, str]]:
    """After one CLI case on the store in ``folder``: exactly ``appended`` events added, every trace
    stored before it as it was, the chain intact; the snapshot to hold the next case against."""
    with cli_store(folder) as store:
        _unchanged(store, before, appended)
        return _snapshot(store)


def test_a_fifo_and_stdin_are_read_once(tmp_path: Path) -> None:
    with cli_store(tmp_path) as store:
        before = _snapshot(store)
    fifo = tmp_path / "trace.jsonl"
    os.mkfifo(fifo)
    _feed_fifo(fifo, EXAMPLE.read_bytes())
    proc = run(["ingest", str(fifo), "--json"], tmp_path)  # hung before: the FIFO was opened 3 times
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["appended"] == 9
    before = _cli_case(tmp_path, before, appended=9)

    _feed_fifo(fifo, _clash(tmp_path).read_bytes())
    clash = run(["review", str(fifo)], tmp_path)
    assert clash.returncode == 2 and f"error: {fifo}: trace '{EXAMPLE_ID}'" in clash.stderr
    assert "auditor-spool" not in clash.stderr
    before = _cli_case(tmp_path, before)  # refused: nothing appended, the example as stored

    _feed_fifo(fifo, _clash(tmp_path).read_bytes())
    renamed = run(["review", str(fifo), "--trace-id", "from-fifo", "--format", "json"], tmp_path)
    assert renamed.returncode in (0, 1), renamed.stderr
    assert json.loads(renamed.stdout)["trace_id"] == "from-fifo"
    before = _cli_case(tmp_path, before, appended=9 + 1)  # the renamed trace and its report

    # /dev/stdin is the process's own fd 0: only a real interpreter with a real pipe shows it read once
    piped = run_process(["review", "/dev/stdin", "--format", "json"], tmp_path, stdin=WHOWHEN.read_bytes())
    assert piped.returncode in (0, 1), piped.stderr
    with cli_store(tmp_path) as store:  # the Who&When trace, its labels and its report
        added = store.stream_version(trace_stream(json.loads(piped.stdout)["trace_id"])) + 1 + 1
    before = _cli_case(tmp_path, before, appended=added)
    dash = run(["review", "-", "--format", "json"], tmp_path, stdin=WHOWHEN.read_bytes())
    assert json.loads(dash.stdout)["trace_digest"] == json.loads(piped.stdout)["trace_digest"]
    _cli_case(tmp_path, before)  # the same trace again: stored and reported already, nothing new
    assert events_in(tmp_path) > 9 and run(["store", "verify"], tmp_path).returncode == 0

"""Inspect logs: ``.eval`` archives, typed tool errors, the sample outcome, and logs with no samples.

Real logs from UKGovernmentBEIS/inspect_ai (tests/fixtures/real/inspect, see SOURCES.md):
``log_formats.json`` (one sample scored "I"), ``log_read_sample.json`` (one sample scored "C") and
``log_tool_call_error.json`` (eleven tool messages, each with a typed error). The search tools hold no
binary ``.eval`` file, so the archives here are packed from those real logs in the layout Inspect
writes: ``header.json`` (the log without samples), ``samples/<id>_epoch_<n>.json``,
``summaries.json``, ``reductions.json`` and ``_journal/start.json``.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.core.errors import InputError
from ingest import detect, open_traces
from schemas.trace import ActorKind, StepKind
from tests.cli_helpers import run
from tests.conftest import REPO

REAL = REPO / "tests" / "fixtures" / "real" / "inspect"


def _log(name: str) -> dict[str, Any]:
    return json.loads((REAL / name).read_text())


def _pack(path: Path, log: dict[str, Any], *, finished: bool = True, extra: list[dict] | None = None) -> Path:
    """An .eval archive of a log, as Inspect lays one out (a running log has no header.json yet)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("_journal/start.json", json.dumps({k: log[k] for k in ("version", "eval", "plan")}))
        for sample in [*log["samples"], *(extra or [])]:
            z.writestr(f"samples/{sample['id']}_epoch_{sample['epoch']}.json", json.dumps(sample))
        summaries = [
            {k: s.get(k) for k in ("id", "epoch", "input", "target", "scores")} for s in log["samples"]
        ]
        z.writestr("_journal/summaries/1.json", json.dumps(summaries))
        if finished:
            z.writestr("summaries.json", json.dumps(summaries))
            z.writestr("reductions.json", json.dumps(log.get("reductions") or []))
            z.writestr("header.json", json.dumps({k: v for k, v in log.items() if k != "samples"}))
    return path


def _steps(trace) -> list[dict]:
    return [s.model_dump(mode="json") for s in trace.steps()]


@pytest.mark.parametrize(
    ("name", "verdict", "scores"),
    [("log_formats.json", "failed", {"match": "I"}), ("log_read_sample.json", "succeeded", {"match": "C"})],
)
def test_an_eval_archive_gives_the_same_traces_as_its_json_log(tmp_path, name, verdict, scores):
    archive = _pack(tmp_path / "run.eval", _log(name))
    assert detect(archive) == ("inspect", "an Inspect .eval archive")
    [from_json] = list(open_traces(REAL / name))
    [from_zip] = list(open_traces(archive))
    assert _steps(from_zip) == _steps(from_json)
    # system prompt, the user's question, the model's answer: three messages in both logs
    assert [(s["actor_kind"], s["kind"]) for s in _steps(from_zip)] == [
        ("system", "message"),
        ("human", "message"),
        ("agent", "message"),
    ]
    assert from_zip.header.trace_id == from_json.header.trace_id
    assert from_zip.header.source == f"{archive}#samples/1_epoch_1.json"
    assert from_zip.header.metadata["outcome"] == {
        "value": verdict,
        "source": "sample.scores",
        "detail": scores,
    }
    assert from_zip.header.metadata["model"] == _log(name)["eval"]["model"]
    assert from_zip.labels.labels["scores"] == _log(name)["samples"][0]["scores"]  # grading stays apart


@pytest.mark.filterwarnings("ignore:Duplicate name")
def test_a_running_archive_is_read_from_its_journal_and_a_relogged_sample_wins(tmp_path):
    log = _log("log_read_sample.json")
    retry = json.loads(json.dumps(log["samples"][0]))
    retry["messages"][2]["content"] = "No\n"
    retry["scores"]["match"]["value"] = "I"
    archive = _pack(tmp_path / "live.eval", log, finished=False, extra=[retry])
    with zipfile.ZipFile(archive) as z:
        assert "header.json" not in z.namelist()
        assert z.namelist().count("samples/1_epoch_1.json") == 2
    [trace] = list(open_traces(archive))
    assert trace.header.metadata["task"] == "popularity" and trace.header.metadata["model"] == "ollama/gemma3"
    assert [s.content for s in trace.steps()][
        -1
    ] == "No\n"  # the last member of that name, as Inspect reads it
    assert trace.header.metadata["outcome"]["value"] == "failed"


@pytest.mark.filterwarnings("ignore:Duplicate name")
def test_broken_archives_are_input_errors_that_name_the_member(tmp_path):
    not_zip = tmp_path / "a.eval"
    not_zip.write_bytes(b"PK\x03\x04 this is not a zip")
    with pytest.raises(InputError, match=r"not a readable \.eval"):
        list(open_traces(not_zip, "inspect"))
    no_header = tmp_path / "b.eval"
    with zipfile.ZipFile(no_header, "w") as z:
        z.writestr("samples/1_epoch_1.json", "{}")
    with pytest.raises(InputError, match=r"neither header\.json nor _journal/start\.json"):
        list(open_traces(no_header))
    bad = _pack(tmp_path / "c.eval", _log("log_formats.json"))
    with zipfile.ZipFile(bad, "a") as z:
        z.writestr("samples/1_epoch_1.json", '{"id": 1, "messages": [')
    with pytest.raises(InputError, match=r"c\.eval!samples/1_epoch_1\.json.*malformed JSON"):
        list(open_traces(bad))


def test_typed_tool_errors_set_the_step_status():
    [trace] = list(open_traces(REAL / "log_tool_call_error.json"))
    steps = list(trace.steps())
    assert len(steps) == 11 and {(s.actor, s.actor_kind, s.kind) for s in steps} == {
        ("bash", ActorKind.tool, StepKind.tool_result)
    }
    assert [s.raw["status"] for s in steps] == ["error"] * 11
    assert [s.raw["error_type"] for s in steps] == [
        "parsing",
        "timeout",
        "parsing",
        "unicode_decode",
        "permission",
        "file_not_found",
        "is_a_directory",
        "limit",
        "approval",
        "unknown",
        "output_limit",
    ]
    assert steps[-1].raw["status_message"] == "The tool output limit of 10 MiB was exceeded."
    assert steps[-1].raw["error"] == {"type": "output_limit", "message": steps[-1].raw["status_message"]}
    assert "outcome" not in trace.header.metadata  # a target but no scores: nothing decides the outcome


def test_only_recorded_verdicts_decide_the_outcome(tmp_path):
    def outcome_of(**changes: Any) -> dict | None:
        log = _log("log_formats.json")
        log["samples"][0].update(changes)
        path = tmp_path / "log.json"
        path.write_text(json.dumps(log))
        [trace] = list(open_traces(path))
        return trace.header.metadata.get("outcome")

    assert outcome_of(scores={"match": {"value": "P"}}) is None  # partial: the scores stay in the labels
    assert outcome_of(scores={"match": {"value": 0.5}}) is None
    assert outcome_of(scores={"a": {"value": "C"}, "b": {"value": "I"}}) is None  # scorers disagree
    assert outcome_of(scores={"a": {"value": 1.0}, "b": {"value": True}})["value"] == "succeeded"
    assert outcome_of(error={"message": "RuntimeError: sandbox died", "traceback": "…"}) == {
        "value": "failed",
        "source": "sample.error",
        "detail": "RuntimeError: sandbox died",
    }
    assert outcome_of(limit={"type": "token", "limit": 4000}) == {
        "value": "failed",
        "source": "sample.limit",
        "detail": {"type": "token", "limit": 4000},
    }


@pytest.mark.parametrize("form", ["json", "eval"])
@pytest.mark.parametrize("as_json", [False, True])
def test_a_log_with_no_samples_is_an_input_error_on_the_cli(tmp_path, form, as_json):
    log = {**_log("log_formats.json"), "samples": []}
    if form == "json":
        path = tmp_path / "empty.json"
        path.write_text(json.dumps(log))
    else:
        path = _pack(tmp_path / "empty.eval", log)
    out = run(["ingest", str(path), *(["--json"] if as_json else [])], tmp_path)
    assert out.returncode == 2, out.stderr
    assert "holds 0 samples; nothing to import" in out.stderr
    assert "Traceback" not in out.stderr and out.stdout == ""  # nothing printed as a result, no "[]"


members = st.one_of(
    st.binary(max_size=60),
    st.recursive(
        st.none() | st.booleans() | st.integers(-2, 2) | st.sampled_from(["", "C", "I", "tool", "user"]),
        lambda inner: st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["eval", "samples", "messages", "role", "content", "scores", "value", "error",
                             "limit", "events", "event", "tool_calls", "id", "epoch", "type", "message"]),
            inner,
            max_size=4,
        ),
        max_leaves=10,
    ).map(lambda v: json.dumps(v).encode()),
)  # fmt: skip


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    header=members,
    samples=st.lists(members, max_size=3),
    name=st.sampled_from(["header.json", "_journal/start.json", "other.json"]),
)
def test_any_archive_is_traces_or_a_clear_error(tmp_path, header, samples, name):
    path = tmp_path / "fuzz.eval"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(name, header)
        for n, sample in enumerate(samples):
            z.writestr(f"samples/{n}_epoch_1.json", sample)
    try:
        for trace in open_traces(path, "inspect"):
            trace.scan()
            assert sum(1 for _ in trace.steps()) == trace.step_count
    except InputError as exc:
        assert str(path) in str(exc)

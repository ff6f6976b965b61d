"""The API logprob proxy offline: a replayed model answers in the OpenAI response shape (logprobs /
top_logprobs) through the real litellm path, with every socket connect refused. Yes/no extraction
(case and space variants, missing answers recorded as unassessed), full vs no-invalid contexts,
per-target gaps, resume, the report's statement that this is not the teacher-forced audit, and
the cluster-bootstrap summary."""

from __future__ import annotations

import json
import math
import socket
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from auditor.core.errors import InputError
from auditor.surfaces.cli.main import app
from schemas.attribution import AttributionTask
from scoring.api_proxy import (
    NOT_TEACHER_FORCED,
    OK,
    UNASSESSED,
    VARIANTS,
    LogprobsUnavailable,
    ProxyTarget,
    invalid_ids,
    messages,
    proposed,
    read_proxy,
    summarise_proxy,
    yes_no,
)
from scoring.datasets import build_dataset
from scoring.runs import run_stream
from scoring.stats import cluster_bootstrap_mean


def test_yes_no_spellings_add_up() -> None:
    out = yes_no(
        " Yes", [(" Yes", -0.2), ("No", -1.9), ("yes", -2.0), (".", -3.0), (" no", -4.0), ("YES", -6.0)]
    )
    lp_yes = math.log(math.exp(-0.2) + math.exp(-2.0) + math.exp(-6.0))
    lp_no = math.log(math.exp(-1.9) + math.exp(-4.0))
    assert out.status == OK and out.first_token == " Yes"
    assert out.log_p_yes == pytest.approx(lp_yes) and out.log_p_no == pytest.approx(lp_no)
    assert out.logodds == pytest.approx(lp_yes - lp_no) and out.reason is None


@pytest.mark.parametrize(
    ("top", "missing"),
    [
        ([("Yes", -0.1), ("Sure", -3.0)], "'no' not among the 2"),
        ([("No", -0.1), ("Nope", -3.0), ("N", -4.0)], "'yes' not among the 3"),
        ([("The", -0.5)], "'yes' and 'no' not among the 1"),
        ([], "'yes' and 'no' not among the 0"),
    ],
)
def test_a_missing_answer_is_unassessed_never_zero(top: list[tuple[str, float]], missing: str) -> None:
    out = yes_no(top[0][0] if top else "", top)
    assert out.status == UNASSESSED and out.logodds is None and out.log_p_yes is None
    assert missing in (out.reason or "")


def test_no_invalid_context_removes_exactly_the_invalid_factors() -> None:
    task = build_dataset("agentaudit")[0]
    target = next(t for t in task.targets if invalid_ids(t))
    gone = {f.text for f in task.factors if f.factor_id in invalid_ids(target)}
    kept = [f.text for f in task.factors if f.factor_id not in invalid_ids(target)]
    full = messages(task, target, "full", "standard")
    clean = messages(task, target, "no_invalid", "standard")
    assert full[0] == clean[0] and full[0]["role"] == "system"
    assert all(text in full[1]["content"] for text in gone | set(kept))
    assert not any(text in clean[1]["content"] for text in gone) and all(
        t in clean[1]["content"] for t in kept
    )
    assert {messages(task, target, "full", v)[1]["content"].rsplit("\n", 1)[1] for v in VARIANTS} == {
        q.format(what=proposed(task, target)) for q in VARIANTS.values()
    }


# -- through the gateway ----------------------------------------------------------------------


def _entry(token: str, top: list[tuple[str, float]]) -> dict[str, Any]:
    """One first-token logprob entry exactly as OpenAI's chat completions return it."""
    return {
        "token": token,
        "logprob": top[0][1],
        "bytes": list(token.encode()),
        "top_logprobs": [{"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in top],
    }


def _record(match: list[str], top: list[tuple[str, float]]) -> dict[str, Any]:
    return {
        "match": match,
        "content": top[0][0],
        "logprobs": {"content": [_entry(top[0][0], top)], "refusal": None},
        "usage": {"prompt_tokens": 412, "completion_tokens": 1},
    }


FULL = {"standard": (-0.05, -3.1), "terse": (-0.3, -1.4), "authorized": (-0.2, -1.8)}
CLEAN = {"standard": (-0.9, -0.52), "terse": (-1.2, -0.36), "authorized": None}  # None: 'no' missing


def _cassette(task: AttributionTask) -> tuple[list[dict[str, Any]], dict[str, dict[str, float | None]]]:
    """Records for every target with Invalid factors, and the gap each (target, variant) must get."""
    records, full_records, gaps = [], [], {}
    for target in task.targets:
        if not invalid_ids(target):
            continue
        invalid_text = next(f.text for f in task.factors if f.factor_id in invalid_ids(target))
        what = f"Proposed {proposed(task, target)}."
        gaps[target.target_id] = {}
        for variant, question in VARIANTS.items():
            q = question.format(what=proposed(task, target))
            y, n = FULL[variant]
            full_records.append(_record([what, q, invalid_text], [(" Yes", y), (" No", n), ("yes", -7.0)]))
            clean = CLEAN[variant]
            if clean is None:
                records.append(_record([what, q], [("Yes", -0.4), ("Maybe", -1.2), ("Sure", -2.5)]))
                gaps[target.target_id][variant] = None
            else:
                records.append(_record([what, q], [("no", clean[1]), ("YES", clean[0])]))
                full_lo = math.log(math.exp(y) + math.exp(-7.0)) - n
                gaps[target.target_id][variant] = full_lo - (clean[0] - clean[1])
    return full_records + records, gaps  # full contexts first: they also contain every clean match


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No socket may connect: litellm has to stay in-process."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"network access attempted: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture
def cli(sqlite_store: Any, monkeypatch: pytest.MonkeyPatch, offline: None) -> Any:
    monkeypatch.setattr("auditor.surfaces.cli.score_cmd.open_cli_store", lambda: sqlite_store)

    def invoke(args: list[str]) -> Any:
        return CliRunner().invoke(app, ["score", *args])

    invoke.store = sqlite_store  # type: ignore[attr-defined]
    return invoke


RUN = ["run", "--dataset", "agentaudit", "--limit", "1", "--experiment", "api-proxy", "--run-id", "px"]


@pytest.mark.slow  # litellm's import takes seconds
def test_run_resume_and_report_through_replayed_gateway(cli: Any, tmp_path: Path) -> None:
    from auditor.core.llm_providers import REPLAY

    task = build_dataset("agentaudit")[0]
    records, gaps = _cassette(task)
    REPLAY.load("proxy", records)
    model = ["--model", "litellm/replay/proxy"]
    first = cli([*RUN, *model, "--target-kind", "slot"])
    assert first.exit_code == 0, first.output
    assert "NOT the teacher-forced target-token audit" in first.output
    slots = [t for t in task.targets if t.kind.value == "slot"]
    n_slot_requests = sum(6 for t in slots if invalid_ids(t))
    assert len(REPLAY.requests["proxy"]) == n_slot_requests

    second = cli([*RUN, *model])  # resumes: only the tool target is new
    assert second.exit_code == 0 and "1 target(s) scored, 2 already in the store" in second.output, (
        second.output
    )
    n_requests = sum(6 for t in task.targets if invalid_ids(t))
    assert len(REPLAY.requests["proxy"]) == n_requests
    version = cli.store.stream_version(run_stream("px"))
    third = cli([*RUN, *model])
    assert third.exit_code == 0 and "0 target(s) scored, 3 already" in third.output
    assert (
        cli.store.stream_version(run_stream("px")) == version and len(REPLAY.requests["proxy"]) == n_requests
    )

    config, rows = read_proxy(cli.store, "px")
    assert config["method"] == NOT_TEACHER_FORCED and config["gateway_model"] == "replay/proxy"
    assert (config["device"], config["dtype"]) == ("gateway", None)
    assert len(rows) == 3
    for row in rows:
        target = next(t for t in task.targets if t.target_id == row.target_id)
        assert row.removed == invalid_ids(target)
        if not row.removed:
            assert row.status == "no-invalid" and row.variants == {} and row.n_requests == 0
            continue
        assert row.n_requests == 6
        for variant, want in gaps[row.target_id].items():
            got = row.variants[variant]
            if want is None:
                assert got["gap"] is None and got["no_invalid"]["status"] == UNASSESSED
                assert "'no' not among the 3" in got["no_invalid"]["reason"]
                assert got["full"]["status"] == OK  # the full context was still assessed
            else:
                assert got["gap"] == pytest.approx(want, abs=1e-6)
                assert got["full"]["first_token"] == " Yes" and got["no_invalid"]["first_token"] == "no"

    report = cli(["report", "px", "--json", "--resamples", "200", "--out", str(tmp_path)])
    assert report.exit_code == 0, report.output
    rep = json.loads(report.stdout)
    assert rep["method"] == NOT_TEACHER_FORCED and rep["n_requests"] == n_requests
    with_invalid = [r for r in rows if r.removed]
    assert rep["without_invalid"] == 3 - len(with_invalid)
    by_cell = {(r["cell"], r["variant"]): r for r in rep["rows"]}
    standard = by_cell[("all", "standard")]
    mean_abs = sum(abs(gaps[r.target_id]["standard"]) for r in with_invalid) / len(with_invalid)
    assert standard["targets"] == str(len(with_invalid)) and standard["unassessed"] == "0"
    assert standard["mean |Δ| [95% CI]"] == f"{mean_abs:.3f} (1 task: no interval)"
    assert by_cell[("all", "authorized")]["complete"] == "0"
    assert by_cell[("all", "authorized")]["mean |Δ| [95% CI]"] == "n/a (no complete row)"
    human = cli(["report", "px", "--resamples", "200", "--out", str(tmp_path)])
    assert (tmp_path / "px.csv").exists()
    assert human.exit_code == 0 and "NOT the teacher-forced" in human.output


@pytest.mark.slow
def test_an_endpoint_without_logprobs_is_a_clear_error(cli: Any) -> None:
    from auditor.core.llm_providers import REPLAY

    REPLAY.load("nolp", [{"match": [], "content": "Yes"}])
    result = cli([*RUN, "--model", "litellm/replay/nolp", "--run-id", "nolp"])
    assert isinstance(result.exception, LogprobsUnavailable)
    assert "replay/nolp answered without first-token logprobs" in result.exception.one_line()
    assert cli.store.stream_version(run_stream("nolp")) == 1  # the run started; no target was stored


def test_a_non_gateway_model_is_refused_before_anything_is_stored(cli: Any) -> None:
    result = cli([*RUN, "--model", "smollm2", "--run-id", "bad"])
    assert isinstance(result.exception, InputError)
    assert "field 'model'" in result.exception.one_line() and "litellm/<" in result.exception.one_line()
    assert cli.store.stream_version(run_stream("bad")) == 0


def _row(task: str, kind: str, gaps: dict[str, float | None]) -> ProxyTarget:
    return ProxyTarget(task, kind, kind, OK, ["f3"], 6, {v: {"gap": g} for v, g in gaps.items()})


def test_summary_clusters_over_source_tasks() -> None:
    rows = [
        _row("t1", "tool", {"standard": 1.0, "terse": -2.0, "authorized": None}),
        _row("t1", "slot", {"standard": -3.0, "terse": 1.0, "authorized": 0.5}),
        _row("t2", "slot", {"standard": 0.5, "terse": 0.0, "authorized": 0.25}),
        _row("t3", "tool", {"standard": 2.0, "terse": 1.0, "authorized": 1.0}),
        ProxyTarget("t4", "tool", "tool", "no-invalid", [], 0, {}),
    ]
    cells, n_without = summarise_proxy("agentaudit", rows, n_resamples=500)
    assert n_without == 1
    by = {(c.cell, c.variant): c for c in cells}
    std = by[("all", "standard")]
    assert (std.n_targets, std.n_complete, std.n_unassessed) == (4, 4, 0)
    want = cluster_bootstrap_mean([1.0, 3.0, 0.5, 2.0], ["t1", "t1", "t2", "t3"], n_resamples=500)
    assert std.abs_gap == want and std.abs_gap.estimate == pytest.approx(1.625)  # type: ignore[union-attr]
    assert std.gap.estimate == pytest.approx(0.125)  # type: ignore[union-attr]
    auth_tool = by[("tool", "authorized")]
    assert (auth_tool.n_complete, auth_tool.n_unassessed, auth_tool.abs_gap) == (1, 1, 1.0)  # one task: no CI
    assert by[("slot", "terse")].abs_gap.estimate == pytest.approx(0.5)  # type: ignore[union-attr]


def test_targets_without_invalid_factors_make_no_request() -> None:
    from scoring.api_proxy import proxy_event

    task = build_dataset("agentaudit")[0]
    target = task.targets[2]  # slot:attachment has no Invalid factor: no no-invalid contrast exists
    assert target.target_id == "slot:attachment" and invalid_ids(target) == []
    calls: list[list[dict[str, str]]] = []

    def ask(chat: list[dict[str, str]]) -> Any:
        calls.append(chat)
        return yes_no(" Yes", [(" Yes", -0.1), (" No", -2.0)])

    event = proxy_event("r", task, target, ask)
    assert calls == [] and event.payload["status"] == "no-invalid" and event.payload["n_requests"] == 0
    proxy_event("r", task, task.targets[0], ask)
    assert len(calls) == 6  # three variants × (full, no-invalid)

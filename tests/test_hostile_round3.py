"""Hostile and careless use of what issues 31 and 33 added, third round: the triage filters, the
feedback on findings, the console's sign-in, policies on the service and their selector, the CLI's
outputs. Each case failed before its fix (the module's commits say how); the server cases run
against a real `auditor serve` process over SQLite and PostgreSQL, the CLI cases through the
console entry point.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("uvicorn")
import httpx

from auditor.audit.feedback import record_feedback
from auditor.core.store import open_store
from auditor.core.store.reports import list_reports
from tests.cli_helpers import run
from tests.serve_support import serving
from tests.test_server_triage import seed_runs

REPO = Path(__file__).resolve().parents[1]
POLICIES = REPO / "examples" / "policies"


def seeded(url: str) -> dict[str, str]:
    """Review the triage runs into the store at ``url``; token name -> token."""
    from auditor.surfaces.server.tokens import create_token

    store = open_store(url)
    try:
        return seed_runs(store) | {"ingester": create_token(store, "ingester", ["ingest"])[0]}
    finally:
        store.close()


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple]:
    """(origin, tokens) of a real `auditor serve` over a seeded store."""
    folder = tmp_path_factory.mktemp(f"serve-{request.param}")
    if request.param == "sqlite":
        url = f"sqlite:///{folder / 'auditor.db'}"
        tokens = seeded(url)
        with serving(url, folder) as origin:
            yield origin, tokens
        return
    yield from _on_postgres(request, folder)


def _on_postgres(request: pytest.FixtureRequest, folder: Path) -> Iterator[tuple]:
    """The same server over a fresh PostgreSQL schema, for the module's lifetime."""
    from tests.conftest import fresh_pg_schema

    with fresh_pg_schema() as url:
        tokens = seeded(url)
        with serving(url, folder) as origin:
            yield origin, tokens


def bearer(tokens: dict[str, str], name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {tokens[name]}"}


def test_a_long_text_search_is_a_400_not_a_500(server: tuple) -> None:
    """Each word of a text search was one LIKE condition: 3,000 words passed SQLite's expression
    depth and answered 500. Now the distinct words are counted and a long paste refused; a
    repeated word counts once."""
    origin, tokens = server
    many = " ".join(f"w{i}" for i in range(3000))
    r = httpx.get(f"{origin}/api/traces", params={"text": many}, headers=bearer(tokens, "reader"))
    assert r.status_code == 400, r.text
    assert r.headers["content-type"] == "application/problem+json"
    assert "'text'" in r.json()["detail"] and "3,000 distinct words" in r.json()["detail"]
    same = httpx.get(f"{origin}/api/traces", params={"text": "the " * 2000}, headers=bearer(tokens, "reader"))
    assert same.status_code == 200, same.text
    assert same.json()["total"] >= 1


def test_injection_strings_in_filters_are_values(server: tuple) -> None:
    """Quotes, comment markers and LIKE wildcards in every free-text filter match literally."""
    origin, tokens = server
    for name in ("detector", "agent", "service", "source", "framework", "participant"):
        for value in ("' OR 1=1 --", "x') OR ('1'='1", "%", "_%_", "\\"):
            r = httpx.get(f"{origin}/api/traces", params={name: value}, headers=bearer(tokens, "reader"))
            assert r.status_code == 200, (name, value, r.text)
            assert r.json()["total"] == 0, (name, value)


def test_export_to_an_unwritable_place_is_one_line(tmp_path: Path) -> None:
    """`feedback export -o` into a place that cannot hold a file (a path under a regular file, a
    read-only file system) printed a traceback; now one line naming the path, exit 2."""
    url = f"sqlite:///{tmp_path / 'auditor.db'}"
    _labelled_store(url)
    (tmp_path / "a-file").write_text("x")
    for target in ("a-file/labels.jsonl", "/proc/labels.jsonl"):
        out = run(["--store", url, "feedback", "export", "-o", target], tmp_path)
        assert out.returncode == 2, out.stderr
        assert out.stderr.startswith(f"error: {target}: cannot write the file: ")
        assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_export_that_fails_half_way_leaves_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write that fails once the data is half out (a full disk) leaves the file that was there
    as it was, and no temporary file beside it."""
    url = f"sqlite:///{tmp_path / 'auditor.db'}"
    _labelled_store(url)
    old = tmp_path / "labels.jsonl"
    old.write_text("the previous export\n")

    def full(*_: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    out = run(["--store", url, "feedback", "export", "-o", str(old)], tmp_path)
    assert out.returncode == 2, out.stderr
    assert "No space left on device" in out.stderr and "Traceback" not in out.stderr
    assert old.read_text() == "the previous export\n"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".labels")) == []


def _labelled_store(url: str) -> None:
    """A store with one reviewed run whose first finding carries a label."""
    from auditor.audit.policy import load_policy
    from auditor.audit.review import review_file

    store = open_store(url)
    try:
        review_file(
            store,
            REPO / "examples" / "incidents" / "airline-task041-trial0.json",
            policy=load_policy(POLICIES / "airline.yaml"),
            outcome="failed",
        )
        report = list_reports(store)[-1]
        reviewer = {"name": "r", "token_id": "t"}
        record_feedback(store, report.report_id, report.findings[0].finding_id, "confirmed", "seen", reviewer)
    finally:
        store.close()


def policy_dir(folder: Path, selector: str | bytes | None, name: str = "selector.yaml") -> Path:
    """A policy directory of the shipped airline and retail policies and ``selector``."""
    folder.mkdir()
    for policy in ("airline", "retail"):
        (folder / f"{policy}.yaml").write_text((POLICIES / f"{policy}.yaml").read_text())
    if isinstance(selector, bytes):
        (folder / name).write_bytes(selector)
    elif selector is not None:
        (folder / name).write_text(selector)
    return folder


def refused(folder: Path, cwd: Path) -> str:
    """`auditor serve --policy FOLDER`'s one-line refusal (exit 2, before any port is taken)."""
    out = run(
        ["--store", f"sqlite:///{cwd / 'auditor.db'}", "serve", "--port", "1", "--policy", str(folder)], cwd
    )
    assert out.returncode == 2, out.stdout + out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    return out.stderr.strip()


def test_a_selector_or_policy_that_is_not_text_is_refused_in_one_line(tmp_path: Path) -> None:
    """Binary bytes in selector.yaml or in a policy printed a UnicodeDecodeError traceback."""
    garbage = bytes(range(128, 256))
    line = refused(policy_dir(tmp_path / "a", garbage), tmp_path)
    assert line.startswith(f"error: {tmp_path / 'a' / 'selector.yaml'}: the selector is not UTF-8 text")
    folder = policy_dir(tmp_path / "b", None)
    (folder / "broken.yaml").write_bytes(garbage)
    assert refused(folder, tmp_path).startswith(
        f"error: {folder / 'broken.yaml'}: the policy is not UTF-8 text"
    )


def test_a_pattern_given_twice_is_refused_at_its_line(tmp_path: Path) -> None:
    """YAML keeps the last of two equal keys: `air*` sent to retail silently. Now the second is
    refused with its line, in a selector and in a policy alike."""
    selector = "version: 1\nby: service.name\nchoose:\n  air*: airline\n  air*: retail\n"
    line = refused(policy_dir(tmp_path / "a", selector), tmp_path)
    assert "selector.yaml, line 5: key 'air*' is given twice" in line
    folder = policy_dir(tmp_path / "b", None)
    (folder / "airline.yaml").write_text((POLICIES / "airline.yaml").read_text() + "name: airline-again\n")
    assert "airline.yaml, line " in refused(folder, tmp_path) and "key 'name' is given twice" in refused(
        folder, tmp_path
    )


def test_a_selector_by_a_header_field_no_trace_has_is_refused(tmp_path: Path) -> None:
    """`by: header.framwork` (a typo) selected nothing for every trace, silently: all went to the
    default. A header field the trace header does not declare is now refused at `by`."""
    line = refused(policy_dir(tmp_path / "a", "by: header.framwork\nchoose: {x: airline}\n"), tmp_path)
    assert "selector.yaml, line 1, field 'by': 'header.framwork' is no field of a trace's header" in line
    line = refused(policy_dir(tmp_path / "b", "by: header.metadata\nchoose: {x: airline}\n"), tmp_path)
    assert "header.metadata.<key>" in line


def test_a_metadata_key_with_dots_is_read_whole(tmp_path: Path) -> None:
    """`header.metadata.service.name` read metadata['service']['name'], so the OpenTelemetry-style
    key `service.name` (the one the search index reads a service from) never matched."""
    from auditor.audit.policy_selection import load_policies
    from auditor.audit.review import read_traces

    folder = policy_dir(tmp_path / "a", "by: header.metadata.service.name\nchoose: {billing-*: retail}\n")
    [(trace, _, _)] = read_traces(REPO / "examples" / "renewal_drift.jsonl")
    trace.header.metadata["service.name"] = "billing-eu"
    assert load_policies(folder).for_trace(trace).name == "retail"


def test_selector_yml_is_the_selector(tmp_path: Path) -> None:
    """A directory's policies may be *.yml; selector.yml was read as a policy and refused with
    "field 'name': Field required". It is the selector; two selectors are refused."""
    from auditor.audit.policy_selection import load_policies

    folder = policy_dir(
        tmp_path / "a", "by: header.framework\nchoose: {handwritten: retail}\n", "selector.yml"
    )
    assert load_policies(folder).selector is not None
    (folder / "selector.yaml").write_text("by: header.framework\nchoose: {x: airline}\n")
    assert "the directory holds two selectors" in refused(folder, tmp_path)


def test_control_characters_from_a_trace_never_reach_the_terminal(tmp_path: Path) -> None:
    """A trace's source, framework and actors are written by whoever produced it; ESC sequences
    in them went to the terminal as they were (clear the screen, set its title) from `traces list`
    (every layout) and `traces show`. They are shown escaped."""
    lines = (REPO / "examples" / "renewal_drift.jsonl").read_text().splitlines()
    trace_id = "hostile-ansi-" + "x" * 170  # too wide to share a line: `traces list` prints blocks
    header = json.loads(lines[0]) | {
        "trace_id": trace_id,
        "source": "src\x1b[2J",
        "framework": "fw\x1b]0;x\x07",
    }
    steps = [json.loads(line) for line in lines[1:]]
    for step in steps:
        step["actor"] += "\x1b[5m\u202e"
        step["content"] = "\x9b31m" + step["content"]
    path = tmp_path / "ansi.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [header, *steps]) + "\n")
    store = ["--store", f"sqlite:///{tmp_path / 'auditor.db'}"]
    assert run([*store, "ingest", str(path)], tmp_path).returncode == 0
    for args in (["traces", "list"], ["traces", "list", "--wide"], ["traces", "show", trace_id]):
        out = run([*store, *args], tmp_path)
        assert out.returncode == 0, out.stderr
        for raw in ("\x1b", "\x9b", "\u202e", "\x07"):
            assert raw not in out.stdout, (args, raw)
        assert "\\x1b" in out.stdout, args


def test_traces_export_to_an_unwritable_place_is_one_line(tmp_path: Path) -> None:
    """`traces export -o` opened the file itself: a place that cannot hold it printed a traceback,
    and a failure half-way left a half-written file. It writes whole or not at all now."""
    store = ["--store", f"sqlite:///{tmp_path / 'auditor.db'}"]
    assert run([*store, "ingest", str(REPO / "examples" / "renewal_drift.jsonl")], tmp_path).returncode == 0
    (tmp_path / "a-file").write_text("x")
    out = run([*store, "traces", "export", "example-renewal-drift", "-o", "a-file/t.jsonl"], tmp_path)
    assert out.returncode == 2 and out.stderr.startswith("error: a-file/t.jsonl: cannot write the file")
    out = run([*store, "traces", "show", "example-renewal-drift", "--width", "0"], tmp_path)
    assert out.returncode == 2 and "--width" in out.stderr


def test_a_page_elsewhere_cannot_sign_a_browser_in_or_out(server: tuple) -> None:
    """Login CSRF: a form on another site posted its own token to /session and the browser was
    signed in as that token (its reviews then filed under the attacker's name). A sign-in or
    sign-out whose Origin is another site is refused; the console's own form still works."""
    origin, tokens = server
    form = {"token": tokens["reviewer"], "next": "/console/"}
    r = httpx.post(f"{origin}/session", data=form, headers={"Origin": "http://elsewhere.example"})
    assert r.status_code == 403 and "set-cookie" not in r.headers
    elsewhere = {"Origin": "null", "Sec-Fetch-Site": "cross-site"}  # a page with no-referrer of its own
    r = httpx.post(f"{origin}/session", data=form, headers=elsewhere)
    assert r.status_code == 403 and "set-cookie" not in r.headers
    r = httpx.post(f"{origin}/session/logout", headers={"Origin": "http://elsewhere.example"})
    assert r.status_code == 403 and "set-cookie" not in r.headers
    own = {"Origin": "null", "Sec-Fetch-Site": "same-origin"}  # this server's page: no-referrer makes it null
    assert httpx.post(f"{origin}/session", data=form, headers=own).status_code == 303
    r = httpx.post(f"{origin}/session", data=form, headers={"Origin": origin})
    assert (
        r.status_code == 303
        and r.headers["location"] == "/console/"
        and "auditor_token=" in r.headers["set-cookie"]
    )
    assert httpx.post(f"{origin}/session/logout", headers={"Origin": origin}).status_code == 303


def test_the_console_write_rule_holds_for_feedback(server: tuple) -> None:
    """The cookie counts for a write only with the console's header and from this origin; a label
    on a finding of another report is a 404, and a reviewer named in the body is ignored."""
    origin, tokens = server
    reports = httpx.get(f"{origin}/api/reports", headers=bearer(tokens, "reader")).json()["reports"]
    full = [
        httpx.get(f"{origin}/api/reports/{r['report_id']}", headers=bearer(tokens, "reader")).json()
        for r in reports
    ]
    a, b = [r for r in full if r["findings"]][:2]
    ids_a = {f["finding_id"] for f in a["findings"]}
    foreign = next(f["finding_id"] for f in b["findings"] if f["finding_id"] not in ids_a)
    path = f"{origin}/api/reports/{a['report_id']}/findings/{a['findings'][0]['finding_id']}/feedback"
    body = {"label": "dismissed", "reason": "checked", "reviewer": {"name": "someone else"}}
    cookie = {"auditor_token": tokens["reviewer"]}
    for headers in (
        {},
        {"X-Auditor-Console": "1", "Origin": "http://elsewhere.example"},
        {"X-Auditor-Console": "1", "Origin": "null"},
    ):
        assert httpx.post(path, json=body, cookies=cookie, headers=headers).status_code == 401, headers
    r = httpx.post(path, json=body, cookies=cookie, headers={"X-Auditor-Console": "1", "Origin": origin})
    assert r.status_code == 201, r.text
    assert r.json()["reviewer"]["name"] == "reviewer"
    other = f"{origin}/api/reports/{a['report_id']}/findings/{foreign}/feedback"
    r = httpx.post(other, json=body, headers=bearer(tokens, "reviewer"))
    assert r.status_code == 404 and foreign in r.json()["detail"]
    assert httpx.post(path, json=body, headers=bearer(tokens, "reader")).status_code == 403


def test_a_label_must_say_one_thing_and_give_a_visible_reason(server: tuple) -> None:
    """A body giving `label` twice was stored under the last one, silently; a reason of zero-width
    spaces passed as said. Both are 400s naming the field, and nothing is stored; a body nested
    past the parser stays a 400, and one of megabytes is a 413 unread."""
    origin, tokens = server
    report = next(
        r
        for r in httpx.get(f"{origin}/api/reports", headers=bearer(tokens, "reader")).json()["reports"]
        if r["findings"]
    )
    full = httpx.get(f"{origin}/api/reports/{report['report_id']}", headers=bearer(tokens, "reader")).json()
    path = f"{origin}/api/reports/{report['report_id']}/findings/{full['findings'][0]['finding_id']}/feedback"
    before = httpx.get(
        f"{origin}/api/reports/{report['report_id']}/feedback", headers=bearer(tokens, "reader")
    ).json()
    headers = bearer(tokens, "reviewer") | {"Content-Type": "application/json"}
    twice = b'{"label": "confirmed", "reason": "seen", "label": "dismissed"}'
    r = httpx.post(path, content=twice, headers=headers)
    assert r.status_code == 400 and "field 'label': the body gives 'label' twice" in r.json()["detail"], (
        r.text
    )
    r = httpx.post(path, json={"label": "dismissed", "reason": "\u200b\u200b\ufeff"}, headers=headers)
    assert r.status_code == 400 and "field 'reason': a label needs a reason" in r.json()["detail"], r.text
    deep = b'{"label": "confirmed", "reason": "x", "z": ' + b"[" * 30_000 + b"]" * 30_000 + b"}"
    assert httpx.post(path, content=deep, headers=headers).status_code == 400
    huge = b'{"label": "confirmed", "reason": "x", "z": [' + b",".join([b'{"a": 1}'] * 1_000_000) + b"]}"
    r = httpx.post(path, content=huge, headers=headers)  # parsed, it held the event loop for a second
    assert r.status_code == 413 and "at most 65,536 bytes" in r.json()["detail"], r.text
    assert httpx.post(path, content=twice, headers={"Content-Type": "application/json"}).status_code == 401
    after = httpx.get(
        f"{origin}/api/reports/{report['report_id']}/feedback", headers=bearer(tokens, "reader")
    ).json()
    assert after == before


def _refund_run(n: int, claims: int, failed_result: str, tool: str):  # -> AuditContext
    """An agent whose ``n`` refunds each fail, each followed by a message of ``claims`` claims."""
    from auditor.audit.detectors.base import AuditContext
    from graph.build import build_graph
    from schemas import GraphMode, Trace

    said = " ".join(f"I have refunded order {1000 + k} in full." for k in range(claims))
    steps: list[dict] = [
        {"actor": "user", "actor_kind": "human", "kind": "message", "content": "Refund my orders."}
    ]
    for k in range(n):
        call = {"name": tool, "arguments": {"order_id": str(1000 + k)}, "call_id": f"c{k}"}
        steps += [
            {"actor": "agent", "actor_kind": "agent", "kind": "tool_call", "content": "", "tool": call},
            {
                "actor": "shop",
                "actor_kind": "tool",
                "kind": "tool_result",
                "content": failed_result,
                "tool": {"name": tool, "call_id": f"c{k}"},
                "refs": {"call_id": f"c{k}"},
            },
            {
                "actor": "agent",
                "actor_kind": "agent",
                "recipients": ["user"],
                "kind": "message",
                "content": said,
            },
        ]
    header = {"trace_id": "hostile-many-failures", "source": "generated", "framework": "handwritten"}
    trace = Trace.model_validate(
        {"header": header, "steps": [{"step_id": f"s{i}", "index": i, **s} for i, s in enumerate(steps)]}
    )
    return AuditContext(trace=trace, graph=build_graph(trace, GraphMode.topology), mode=GraphMode.topology)


def _detect_growth(
    detector, runs: tuple[int, int], claims: int, failed_result: str, tool: str
) -> tuple[float, list]:
    """How a detector's time grows from the smaller run to the one twice its size (best of three
    each, in this one process: a ratio, not a time), and its findings on the larger."""
    from tests.timing import best_seconds

    seconds = []
    for n in runs:
        ctx = _refund_run(n, claims, failed_result, tool)
        seconds.append(best_seconds(lambda ctx=ctx: list(detector.detect(ctx))))
    return seconds[1] / seconds[0], list(detector.detect(ctx))


def test_failure_contradiction_is_not_quadratic_in_failed_calls() -> None:
    """Every failed call re-read every later step of its agent: 800 failed refunds, each followed
    by a message of forty claims, took 27 s in this detector alone (1,500: 40 s, while a
    service's audit thread waited). The agent's sentences are indexed once now; the findings are
    the same (one per claim, at the first claim after each failure). Twice the run must cost
    about twice the time (a square would cost four times)."""
    from auditor.audit.detectors.failure_contradiction import FailureContradictionDetector

    claims = 40
    error = json.dumps({"error": "403 amount exceeds agent limit"})
    growth, drafts = _detect_growth(FailureContradictionDetector(), (300, 600), claims, error, "issue_refund")
    assert growth < 3, growth
    assert len(drafts) == claims  # the first forty refunds are each claimed in the message after them
    assert [d.evidence[-1].step_id for d in drafts] == [f"s{3 + 3 * k}" for k in range(claims)]


def test_failure_mismatch_is_not_quadratic_in_reports() -> None:
    """Each report of a done action listed every earlier call of the run (10 s at 400 failed
    calls each followed by forty reports). Each agent's calls by verb are summarised once now;
    the finding is the same: one report, at the first message, citing the failed call."""
    from auditor.audit.detectors.failure_mismatch import FailureMismatchDetector

    growth, drafts = _detect_growth(
        FailureMismatchDetector(), (300, 600), 40, "Error: 403 amount exceeds agent limit", "refund_order"
    )
    assert growth < 3, growth
    (draft,) = drafts
    assert [u.step_id for u in draft.evidence] == ["s2", "s3"]


def test_a_filter_the_listing_does_not_take_is_refused(server: tuple) -> None:
    """A misspelt filter (`min_rsik`) or one of the other listing's (`has_findings` on reports)
    was ignored: the answer held every row, read as filtered. It is a 400 naming the parameter and
    listing the ones taken; a NaN risk says it is no finite number (it said "at most 1")."""
    origin, tokens = server
    for path, params in (
        ("/api/traces", {"min_rsik": "0.9"}),
        ("/api/reports", {"has_findings": "true"}),
        ("/api/reports", {"severity": "high", "limit": "5"}),
    ):
        r = httpx.get(f"{origin}{path}", params=params, headers=bearer(tokens, "reader"))
        assert r.status_code == 400, r.text
        wrong = next(k for k in params if k != "limit")
        assert r.json()["detail"].startswith(
            f"unknown query parameter '{wrong}' (this listing takes: agent, "
        )
    for value in ("NaN", "inf"):
        r = httpx.get(f"{origin}/api/traces", params={"min_risk": value}, headers=bearer(tokens, "reader"))
        assert (
            r.status_code == 400
            and r.json()["detail"] == "query parameter 'min_risk': Input should be a finite number"
        )
    every = {
        "outcome": "failed",
        "min_risk": "0",
        "since": "2000-01-01T00:00:00Z",
        "exact_total": "true",
        "limit": "5",
    }
    assert (
        httpx.get(f"{origin}/api/traces", params=every, headers=bearer(tokens, "reader")).status_code == 200
    )


def test_an_upload_refused_names_the_api_parameter(server: tuple) -> None:
    """POST /api/audit's refusals named the CLI's option (`field '--trace-id': Value error, …`)
    to an API client, which has no such option; they name the query parameter now."""
    origin, tokens = server
    example = (REPO / "examples" / "renewal_drift.jsonl").read_bytes()
    audit = f"{origin}/api/audit"
    r = httpx.post(audit, params={"trace_id": "a b"}, content=example, headers=bearer(tokens, "ingester"))
    assert r.status_code == 400 and r.json()["detail"].startswith(
        "query parameter 'trace_id': trace id 'a b' holds"
    )
    chats = b"".join(
        json.dumps(
            {"messages": [{"role": "user", "content": q}, {"role": "assistant", "content": "ok"}]}
        ).encode()
        + b"\n"
        for q in ("hello", "again")
    )
    params = {"trace_id": "t1", "format": "chat-jsonl"}
    r = httpx.post(audit, params=params, content=chats, headers=bearer(tokens, "ingester"))
    assert r.status_code == 400 and "--" not in r.json()["detail"], r.text
    assert "trace_id names one trace, but this input holds several" in r.json()["detail"]


def test_a_yes_no_attribute_selects_as_written_in_yaml(tmp_path: Path) -> None:
    """A boolean resource attribute (`deployment.canary`: true) was compared as Python prints it,
    'True', so the selector's `"true": …` never matched (YAML's unquoted true is no pattern)."""
    from auditor.audit.policy_selection import load_policies
    from auditor.audit.review import read_traces

    folder = policy_dir(
        tmp_path / "a", 'by: resource.deployment.canary\nchoose: {"true": retail}\ndefault: airline\n'
    )
    [(trace, _, _)] = read_traces(REPO / "examples" / "renewal_drift.jsonl")
    policies = load_policies(folder)
    assert policies.for_trace(trace, {"deployment.canary": True}.get).name == "retail"
    assert policies.for_trace(trace, {"deployment.canary": False}.get).name == "airline"


def test_serve_refuses_a_bad_port_host_or_log_level_in_one_line(tmp_path: Path) -> None:
    """`serve --port 70000` (or -1) printed an OverflowError traceback; `--log-level shout` a
    KeyError once the store was open and the banner printed; a host that is no address of this
    machine was blamed on the port ("stop the process that holds the port"). Each is one line,
    exit 2, naming the option at fault, and no store is created."""
    db = tmp_path / "auditor.db"
    store = ["--store", f"sqlite:///{db}", "serve"]
    for args, option in (
        (["--port", "70000"], "--port"),
        (["--port", "-1"], "--port"),
        (["--log-level", "shout"], "--log-level"),
        (["--host", "10.255.255.1", "--port", "18080"], "--host"),
        (["--host", "no-such-host.invalid", "--port", "18080"], "--host"),
    ):
        out = run([*store, *args], tmp_path)
        assert out.returncode == 2, (args, out.stderr)
        assert "Traceback" not in out.stderr and option in out.stderr, (args, out.stderr)
        assert "holds the port" not in out.stderr or option == "--port"
    assert not db.exists()


def test_stream_refuses_a_metrics_port_out_of_range_before_kafka(tmp_path: Path) -> None:
    """`stream workers --metrics-port 70000` connected to Kafka first and failed when the metrics
    server bound (an OverflowError); the range is checked as the options are read."""
    for command in ("workers", "consume"):
        out = run(["stream", command, "--bootstrap", "127.0.0.1:1", "--metrics-port", "70000"], tmp_path)
        assert out.returncode == 2 and "'--metrics-port'" in out.stderr and "65535" in out.stderr, out.stderr


def test_a_long_framework_or_actor_does_not_stop_the_index(server: tuple) -> None:
    """The search index's columns have lengths (framework 200, a participant 512), the trace
    contract none: on PostgreSQL one upload with a 300-character framework answered 500, and so
    did every listing after it, for good (the index stopped at that event). Values are cut as the
    index holds them, and a filter by the whole value still finds the trace."""
    origin, tokens = server
    lines = (REPO / "examples" / "renewal_drift.jsonl").read_text().splitlines()
    header = json.loads(lines[0]) | {"trace_id": "hostile-long-names", "framework": "F" * 300}
    steps = [json.loads(line) for line in lines[1:]]
    steps[0]["actor"] = "A" * 600
    body = "\n".join(json.dumps(r) for r in [header, *steps]) + "\n"
    r = httpx.post(f"{origin}/api/audit", content=body, headers=bearer(tokens, "ingester"))
    assert r.status_code == 201, r.text
    reader = bearer(tokens, "reader")
    for params in ({}, {"framework": "f" * 300}, {"participant": "a" * 600}, {"order": "riskiest"}):
        r = httpx.get(f"{origin}/api/traces", params=params, headers=reader)
        assert r.status_code == 200, (params, r.text)
        assert "hostile-long-names" in [t["trace_id"] for t in r.json()["traces"]], params
    assert httpx.get(f"{origin}/api/reports", headers=reader).status_code == 200


def test_a_claim_in_one_endless_sentence_is_quoted_around_what_it_says(tmp_path: Path) -> None:
    """failure_contradiction quoted the claiming sentence whole: an agent message of 2.7 MB with no
    full stop made its evidence quote 2.7 MB and the report 10.8 MB. The quote is the verbatim
    stretch from the completed word past the object (at most 400 characters), and still resolves."""
    from auditor.audit.review import review_file

    refund = {"name": "issue_refund", "call_id": "c0"}
    steps = [
        {"actor": "user", "actor_kind": "human", "kind": "message", "content": "Refund order 1000 please."},
        {"actor": "agent", "actor_kind": "agent", "kind": "tool_call", "content": "issue_refund(1000)",
         "tool": refund | {"arguments": {"order_id": "1000"}}},
        {"actor": "shop", "actor_kind": "tool", "kind": "tool_result", "tool": refund, "refs": {"call_id": "c0"},
         "content": json.dumps({"error": "403 amount exceeds agent limit"})},
        {"actor": "agent", "actor_kind": "agent", "recipients": ["user"], "kind": "message",
         "content": "I have refunded order 1000 " + "and everything else " * 100_000},
    ]  # fmt: skip
    header = {
        "record": "header",
        "format_version": 1,
        "trace_id": "hostile-endless-claim",
        "framework": "handwritten",
    }
    records = [header] + [
        {"record": "step", "step_id": f"s{i}", "index": i, **s} for i, s in enumerate(steps)
    ]
    path = tmp_path / "claim.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    store = open_store(f"sqlite:///{tmp_path / 'auditor.db'}")
    try:
        [outcome] = review_file(store, path)
    finally:
        store.close()
    [finding] = [f for f in outcome.report.findings if f.detector == "failure_contradiction"]
    claim = finding.evidence[-1]
    assert claim.step_id == "s3" and claim.quote.startswith("refunded order 1000 and everything else")
    assert len(claim.quote) <= 400 and claim.quote in steps[3]["content"]
    assert len(outcome.report.model_dump_json()) < 100_000


def test_an_export_line_holds_one_record_whatever_its_text(tmp_path: Path) -> None:
    """JSON leaves U+2028, U+2029 and U+0085 raw in a string, and Python's splitlines() (and
    other readers) break a line there: a reason pasted from a document cut its record in two.
    They are written escaped; the text reads back the same."""
    url = f"sqlite:///{tmp_path / 'auditor.db'}"
    _labelled_store(url)
    store = open_store(url)
    try:
        report = list_reports(store)[-1]
        reason = "seen\u2028in the log\u2029and\x85confirmed"
        record_feedback(
            store,
            report.report_id,
            report.findings[0].finding_id,
            "dismissed",
            reason,
            {"name": "r", "token_id": "t"},
        )
    finally:
        store.close()
    out = run(["--store", url, "feedback", "export", "-o", "labels.jsonl"], tmp_path)
    assert out.returncode == 0, out.stderr
    lines = (tmp_path / "labels.jsonl").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["reason"] == reason


def test_a_bulk_call_of_many_ids_is_read_sentence_by_sentence() -> None:
    """One failed call naming 20,000 order ids, then a message of 3,000 claims: each id looked up
    in the whole text took 1.4 s (20 MB of search); a call naming many objects is read sentence by
    sentence instead, and stops at its first claim. Twice the ids and claims must cost about twice
    the time, not four times."""
    from auditor.audit.detectors.base import AuditContext
    from auditor.audit.detectors.failure_contradiction import FailureContradictionDetector
    from graph.build import build_graph
    from schemas import GraphMode, Trace
    from tests.timing import best_seconds

    def bulk(n_ids: int, n_claims: int) -> AuditContext:
        ids = [str(100_000 + k) for k in range(n_ids)]
        call = {"name": "bulk_refund", "call_id": "c0"}
        steps = [
            {"actor": "user", "actor_kind": "human", "kind": "message", "content": "Refund them all."},
            {"actor": "agent", "actor_kind": "agent", "kind": "tool_call", "content": "", "tool": call | {"arguments": {"ids": ids}}},
            {"actor": "shop", "actor_kind": "tool", "kind": "tool_result", "content": json.dumps({"error": "403"}),
             "tool": call, "refs": {"call_id": "c0"}},
            {"actor": "agent", "actor_kind": "agent", "recipients": ["user"], "kind": "message",
             "content": " ".join(f"I have refunded order {k}." for k in ids[:n_claims])},
        ]  # fmt: skip
        header = {"trace_id": "hostile-bulk", "source": "generated", "framework": "handwritten"}
        trace = Trace.model_validate(
            {"header": header, "steps": [{"step_id": f"s{i}", "index": i, **s} for i, s in enumerate(steps)]}
        )
        return AuditContext(
            trace=trace, graph=build_graph(trace, GraphMode.topology), mode=GraphMode.topology
        )

    contexts = (bulk(10_000, 1_500), bulk(20_000, 3_000))
    seconds = [best_seconds(lambda ctx=ctx: FailureContradictionDetector().detect(ctx)) for ctx in contexts]
    assert seconds[1] / seconds[0] < 3, seconds
    [draft] = FailureContradictionDetector().detect(contexts[1])
    assert draft.evidence[-1].quote.startswith("I have refunded order 100000.")


def test_a_sign_in_form_of_megabytes_is_refused_unread(server: tuple) -> None:
    """Anyone may post to /session: 16 MB of `a=b` fields took the form parser 3 s on the server's
    event loop, every other request waiting. A form over 8 KiB is a 413 sign-in page, unread."""
    origin, tokens = server
    body = b"&".join([b"a=b"] * 4_000_000)
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    r = httpx.post(f"{origin}/session", content=body, headers=headers, timeout=60)
    assert r.status_code == 413 and "too large" in r.text and "set-cookie" not in r.headers
    ok = httpx.post(f"{origin}/session", data={"token": tokens["reader"], "next": "/console/"})
    assert ok.status_code == 303


def test_traces_list_on_postgres_holds_a_framework_longer_than_its_column(tmp_path: Path) -> None:
    """The traces list projection's framework column holds 200 characters, the trace contract
    any number: one stored trace with a 300-character framework made every `traces list` on
    PostgreSQL a traceback from then on. The projection keeps the column's length."""
    from tests.conftest import fresh_pg_schema

    lines = (REPO / "examples" / "renewal_drift.jsonl").read_text().splitlines()
    header = json.loads(lines[0]) | {"trace_id": "hostile-long-framework", "framework": "F" * 300}
    path = tmp_path / "long.jsonl"
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    with fresh_pg_schema() as url:
        store = ["--store", url]
        assert run([*store, "ingest", str(path)], tmp_path).returncode == 0
        listed = run([*store, "traces", "list", "--wide", "--json"], tmp_path)
        assert listed.returncode == 0, listed.stderr
        (row,) = json.loads(listed.stdout)
        assert row["trace_id"] == "hostile-long-framework" and row["framework"] == "F" * 200

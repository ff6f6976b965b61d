"""Triage and feedback in the console, in a real browser (issue 33, items 2 and 3): the landing
page lists runs riskiest first with outcome and attribution, the report page shows outcome (and
its source), attribution linked to its step, risk score and policy, and a reviewer dismisses a
finding there with a reason, which `auditor feedback export` then writes out and the detectors
page counts. Headless chromium over CDP (tests/test_server_browser.py) against the app on
loopback, over the real runs of tests/test_server_triage.py. AUDITOR_CONSOLE_SHOTS=docs keeps the
screenshots (docs/console-triage.png, docs/console-feedback.png).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("uvicorn")
websockets_sync = pytest.importorskip("websockets.sync.client")

from auditor.core.store import EventStore, open_store  # noqa: E402
from auditor.core.store.reports import list_reports  # noqa: E402
from tests.cli_helpers import run  # noqa: E402
from tests.test_server_browser import Page, browser, serve, shots_folder  # noqa: E402
from tests.test_server_triage import seed_runs  # noqa: E402

pytestmark = pytest.mark.browser
ROWS = "[...document.querySelectorAll('#traces tbody tr')]"


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[EventStore, dict[str, str]]]:
    store = open_store(f"sqlite:///{tmp_path_factory.mktemp('console-triage') / 'auditor.db'}")
    tokens = seed_runs(store)
    yield store, tokens
    store.close()


@pytest.fixture(scope="module")
def origin(seeded: tuple[EventStore, dict[str, str]]) -> Iterator[str]:
    yield from serve(seeded[0])


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    yield from browser(tmp_path_factory.mktemp("profile"))


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shots_folder(tmp_path_factory)


def sign_in(page: Page, origin: str, token: str) -> Page:
    page.call("Network.enable")
    page.call("Network.clearBrowserCookies")
    page.goto(f"{origin}/console/")
    page.wait("document.querySelector('form[action=\"/session\"]')")
    page.eval(
        f"document.getElementById('token').value = {json.dumps(token)}; document.querySelector('form').submit(); true"
    )
    page.wait("document.body && document.body.dataset.ready === 'traces'")
    return page


def fetched(page: Page, path: str) -> dict:
    return json.loads(page.eval(f"fetch({json.dumps(path)}).then(r => r.text())"))


def test_the_landing_page_lists_runs_riskiest_first(
    page: Page, origin: str, seeded: tuple[EventStore, dict[str, str]], shots: Path
) -> None:
    store, tokens = seeded
    p = sign_in(page, origin, tokens["reader"])
    p.screenshot(shots / "console-triage.png")
    assert p.eval("document.querySelector('main h1').textContent") == "Runs, riskiest first"
    api = fetched(p, "/api/traces?order=riskiest")["traces"]
    shown = p.eval(
        f"{ROWS}.map(r => ({{id: r.cells[0].textContent, risk: r.cells[6].textContent,"
        " outcome: r.cells[7].textContent, attribution: r.cells[8].textContent,"
        " step: r.cells[8].querySelector('a') && r.cells[8].querySelector('a').getAttribute('href')}))"
    )
    assert [s["id"] for s in shown] == [t["trace_id"] for t in api] and len(shown) == len(list_reports(store))
    risks = [float(s["risk"]) for s in shown]
    assert risks == sorted(risks, reverse=True) and risks[0] > risks[-1]
    for s, t in zip(shown, api, strict=True):
        assert s["outcome"].startswith(t["outcome"])
        if t["outcome_source"] != "none":
            assert f"({t['outcome_source']})" in s["outcome"]
        if t["agent"]:
            assert s["attribution"].startswith(f"{t['agent']} at {t['decisive_step']}")
            assert s["step"] == f"#/trace/{t['trace_id']}?step={t['decisive_step']}"
    # the attribution's step opens the transcript at that step
    first = next(t for t in api if t["decisive_step"])
    row = [t["trace_id"] for t in api].index(first["trace_id"]) + 1
    p.click(f"#traces tbody tr:nth-child({row}) td.attribution a")
    p.wait("document.body.dataset.ready === 'trace' && document.querySelector('li.step.current')")
    assert p.eval("document.querySelector('li.step.current').dataset.step") == first["decisive_step"]
    triage = p.eval("document.getElementById('trace-triage').textContent")
    assert triage.startswith(f"risk {first['risk_score']:.2f} · {first['outcome']}")
    assert f"{first['agent']} at {first['decisive_step']}" in triage
    # a triage filter from the form, kept in the URL
    p.goto(f"{origin}/console/#/", "traces")
    p.eval("document.querySelector('select[name=outcome]').value = 'failed'; true")
    p.click("form.filters button[type=submit]")
    p.wait("location.hash.includes('outcome=failed') && document.body.dataset.ready === 'traces'")
    failed = [t["trace_id"] for t in fetched(p, "/api/traces?order=riskiest&outcome=failed")["traces"]]
    p.wait(f"{ROWS}.length === {len(failed)}")
    assert p.eval(f"{ROWS}.map(r => r.cells[0].textContent)") == failed and len(failed) < len(api)


def test_a_reviewer_dismisses_a_finding_and_exports_it(
    page: Page, origin: str, seeded: tuple[EventStore, dict[str, str]], tmp_path: Path, shots: Path
) -> None:
    store, tokens = seeded
    report = next(r for r in list_reports(store) if r.policy is not None)  # the airline run, under its policy
    finding = report.findings[0]
    p = sign_in(page, origin, tokens["reviewer"])
    p.goto(f"{origin}/console/#/report/{report.report_id}", "report")
    assert p.eval("document.getElementById('report-risk').textContent") == f"{report.risk_score:.2f}"
    outcome = p.eval("document.getElementById('report-outcome').textContent")
    assert outcome.startswith(f"{report.outcome.value} ({report.outcome.source.value})")
    assert report.outcome.reason in outcome
    attribution = report.attribution
    assert p.eval("document.getElementById('report-attribution').textContent").startswith(
        f"{attribution.agent} at {attribution.step_id} ({attribution.confidence:.2f})"
    )
    assert (
        p.eval("document.getElementById('report-policy').textContent")
        == f"{report.policy.name} {report.policy.digest}"
    )
    before = fetched(p, f"/api/reports/{report.report_id}")
    # an empty reason is refused in the page; then a dismissal with its reason
    box = f"section.feedback[data-finding={json.dumps(finding.finding_id)}]"
    p.click(f"{box} button.dismiss")
    p.wait(f"document.querySelector('{box} [role=status]').textContent.includes('reason')")
    reason = "the booking was made ten hours before: the customer said so at s4"
    p.eval(f"document.querySelector('{box} textarea').value = {json.dumps(reason)}; true")
    p.click(f"{box} button.dismiss")
    p.wait(f"document.querySelector('{box} li.label-dismissed')")
    assert reason in p.eval(f"document.querySelector('{box} li.label-dismissed').textContent")
    p.screenshot(shots / "console-feedback.png")
    stored = [e.payload for e in store.read_stream(f"feedback-{report.report_id}")]
    assert [(x["finding_id"], x["label"], x["reason"], x["reviewer"]["name"]) for x in stored] == [
        (finding.finding_id, "dismissed", reason, "reviewer")
    ]
    assert fetched(p, f"/api/reports/{report.report_id}") == before  # the report never changes
    # the label is there on a fresh load, and counted on the detectors page
    p.eval("delete document.body.dataset.ready; location.reload(); true")
    p.wait(
        f"document.body && document.body.dataset.ready === 'report' && document.querySelector('{box} li.label-dismissed')"
    )
    p.goto(f"{origin}/console/#/detectors", "detectors")
    cells = p.eval(
        "[...document.querySelectorAll('#detectors tbody tr')].map(r => [...r.cells].map(c => c.textContent))"
    )
    assert [finding.detector, "0", "1", "0.0%"] in cells
    # exported as a labelled finding
    out = tmp_path / "labels.jsonl"
    url = store.engine.url.render_as_string(hide_password=False)
    done = run(["--store", url, "feedback", "export", "-o", str(out)], tmp_path)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["finding_id"], r["label"], r["reason"]) for r in rows] == [
        (finding.finding_id, "dismissed", reason)
    ]
    assert rows[0]["quotes"] == [
        {"step_id": u.step_id, "edge_ref": u.edge_ref, "quote": u.quote} for u in finding.evidence
    ]


def test_a_reader_sees_labels_but_cannot_give_one(
    page: Page, origin: str, seeded: tuple[EventStore, dict[str, str]]
) -> None:
    store, tokens = seeded
    report = next(r for r in list_reports(store) if r.findings)
    p = sign_in(page, origin, tokens["reader"])
    p.goto(f"{origin}/console/#/report/{report.report_id}", "report")
    assert p.eval("document.querySelectorAll('section.feedback').length") == len(report.findings)
    assert p.eval("document.querySelector('section.feedback textarea')") is None
    # the session counts for the console's write, and the reader's token lacks the scope
    status = p.eval(
        f"fetch('/api/reports/{report.report_id}/findings/{report.findings[0].finding_id}/feedback',"
        " {method: 'POST', headers: {'Content-Type': 'application/json', 'X-Auditor-Console': '1'},"
        " body: JSON.stringify({label: 'confirmed', reason: 'x'})}).then(r => r.status)"
    )
    assert status == 403  # signed in, but the token lacks the review scope

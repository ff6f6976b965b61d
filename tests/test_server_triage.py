"""Triage and feedback over a real store (issue 33, items 2 and 3): runs listed riskiest first and
filtered by what their reports say, and reviewers' labels on findings stored as events, counted
per detector on the API and ``/metrics``, and exported by ``auditor feedback export``.

The store holds real runs, reviewed as ``auditor review`` does: the shipped failed airline run
under the airline policy, the renewal example, an AgentDojo injection, and two OpenTelemetry GenAI
span files (one failed, one clean) from services named in their resource. Expected values are
read from the stored reports, never written out here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient

from auditor.audit.policy import load_policy
from auditor.audit.review import review_file
from auditor.core.store import EventStore, open_store
from auditor.core.store.reports import list_reports, load_report
from auditor.surfaces.server import ServerConfig, create_app
from auditor.surfaces.server.tokens import create_token
from schemas import AuditReport
from tests.cli_helpers import run

REPO = Path(__file__).resolve().parents[1]
RUNS = [
    (REPO / "examples" / "renewal_drift.jsonl", {}),
    (REPO / "tests" / "fixtures" / "ingest" / "otel_genai.json", {}),
    (REPO / "examples" / "incidents" / "agentdojo-banking-injected-rent.json", {}),
    (REPO / "tests" / "fixtures" / "ingest" / "otel_genai_failure.json", {}),
    (
        REPO / "examples" / "incidents" / "airline-task041-trial0.json",
        {"policy": REPO / "examples" / "policies" / "airline.yaml", "outcome": "failed"},
    ),
]
SCOPES = {"reader": ["read"], "reviewer": ["read", "review"], "scraper": ["metrics"]}


def seed_runs(store: EventStore) -> dict[str, str]:
    """Review every run into ``store`` and make the tokens; returns token name -> token."""
    for path, options in RUNS:
        policy = load_policy(options["policy"]) if "policy" in options else None
        review_file(store, path, policy=policy, outcome=options.get("outcome"))
    return {name: create_token(store, name, scopes)[0] for name, scopes in SCOPES.items()}


TOKENS: dict[int, dict[str, str]] = {}  # id of a seeded store -> token name -> token


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EventStore]:
    s = open_store(f"sqlite:///{tmp_path_factory.mktemp('triage') / 'auditor.db'}")
    TOKENS[id(s)] = seed_runs(s)
    yield s
    s.close()


@pytest.fixture(scope="module")
def client(store: EventStore) -> Iterator[TestClient]:
    with TestClient(create_app(ServerConfig(), store=store)) as c:
        yield c


def auth(store: EventStore, name: str = "reader") -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[id(store)][name]}"}


def latest(store: EventStore) -> dict[str, AuditReport]:
    """Each trace's latest report, as the store holds it."""
    return {r.trace_id: r for r in list_reports(store)}


def listing(client: TestClient, store: EventStore, path: str = "/api/traces", **params: object) -> dict:
    r = client.get(path, params=params, headers=auth(store))
    assert r.status_code == 200, r.text
    return r.json()


def test_riskiest_first_with_outcome_and_attribution(
    client: TestClient, store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    check_riskiest(client, store)
    monkeypatch.setattr("auditor.surfaces.server.search.DEEP_OFFSET", 1)  # pages past it skip by position
    check_riskiest(client, store)


@pytest.mark.postgres
def test_triage_on_postgres(pg_schema_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same listings through PostgreSQL, whose reader plans without sequential scans: every
    filter and order has its index."""
    store = open_store(pg_schema_url)
    try:
        TOKENS[id(store)] = seed_runs(store)
        with TestClient(create_app(store=store)) as c:
            check_riskiest(c, store)
            for path in ("/api/traces", "/api/reports"):
                check_filters(c, store, path)
            monkeypatch.setattr("auditor.surfaces.server.search.DEEP_OFFSET", 1)
            check_riskiest(c, store)
    finally:
        store.close()


def check_riskiest(client: TestClient, store: EventStore) -> None:
    """Riskiest first, each row with its latest report's risk, outcome and attribution; paged."""
    reports = latest(store)
    body = listing(client, store, order="riskiest")
    rows = body["traces"]
    newest_first = list(reports)[::-1]  # the store lists reports oldest first
    assert [t["trace_id"] for t in rows] == sorted(newest_first, key=lambda t: -reports[t].risk_score)
    scores = [t["risk_score"] for t in rows]
    assert scores == sorted(scores, reverse=True) and scores[0] > 0 and scores[-1] == 0
    for t in rows:
        report = reports[t["trace_id"]]
        assert t["risk_score"] == report.risk_score and t["report_id"] == report.report_id
        assert (t["outcome"], t["outcome_source"]) == (report.outcome.value, report.outcome.source.value)
        attribution = report.attribution
        assert t["agent"] == (attribution and attribution.agent)
        assert t["decisive_step"] == (attribution and attribution.step_id)
        assert t["attribution_confidence"] == (attribution and attribution.confidence)
    one = client.get(f"/api/traces/{rows[0]['trace_id']}", headers=auth(store)).json()
    assert {k: one[k] for k in ("risk_score", "outcome", "agent", "decisive_step")} == {
        k: rows[0][k] for k in ("risk_score", "outcome", "agent", "decisive_step")
    }
    # pages of two, concatenated, are the whole riskiest-first list
    paged = [t["trace_id"] for o in range(0, len(rows), 2) for t in listing(
        client, store, order="riskiest", offset=o, limit=2)["traces"]]  # fmt: skip
    assert paged == [t["trace_id"] for t in rows]


@pytest.mark.parametrize("path", ["/api/traces", "/api/reports"])
def test_triage_filters_read_the_latest_report(client: TestClient, store: EventStore, path: str) -> None:
    check_filters(client, store, path)


def check_filters(client: TestClient, store: EventStore, path: str) -> None:
    """Each triage filter matches exactly the runs whose latest report says so."""
    reports = latest(store)
    key = "traces" if path == "/api/traces" else "reports"

    def ids(**params: object) -> list[str]:
        body = listing(client, store, path, order="riskiest", **params)
        assert body["total"] == len(body[key]) and body["total_exact"]
        return sorted(row["trace_id"] for row in body[key])

    def expected(keep) -> list[str]:  # type: ignore[no-untyped-def]
        found = sorted(t for t, r in reports.items() if keep(r))
        assert found, "each filter is tried on values some report has"
        return found

    failed = expected(lambda r: r.outcome.value == "failed")
    assert ids(outcome="failed") == failed and len(failed) < len(reports)
    assert ids(decision="no_material_risk") == expected(lambda r: r.decision.value == "no_material_risk")
    top = max(r.risk_score for r in reports.values())
    assert ids(min_risk=top) == expected(lambda r: r.risk_score >= top)
    for finding in [f for r in reports.values() for f in r.findings]:
        assert ids(detector=finding.detector) == expected(
            lambda r, d=finding.detector: d in {f.detector for f in r.findings}
        )
        assert ids(risk_class=finding.risk_class.value) == expected(
            lambda r, c=finding.risk_class: c in {f.risk_class for f in r.findings}
        )
    agent = next(r.attribution.agent for r in reports.values() if r.attribution and r.attribution.agent)
    named = expected(
        lambda r: (
            agent.lower()
            in {(f.responsible_participant or "").lower() for f in r.findings}
            | {((r.attribution and r.attribution.agent) or "").lower()}
        )
    )
    assert ids(agent=agent.upper()) == named  # any case
    services = {t: load_trace_service(store, t) for t in reports}
    service = next(s for s in services.values() if s)
    assert ids(service=service.upper()) == sorted(t for t, s in services.items() if s == service)
    assert ids(outcome="failed", min_risk=top) == sorted(set(failed) & set(ids(min_risk=top)))
    assert ids(detector="no-such-detector") == []


def load_trace_service(store: EventStore, trace_id: str) -> str | None:
    """The service a span file's resource names: the span importers keep it as the framework."""
    from auditor.core.store.traces import load_trace

    header = load_trace(store, trace_id).header
    return header.framework if "otel_trace_id" in header.metadata else None


def test_time_window_and_bad_filters(client: TestClient, store: EventStore) -> None:
    everything = listing(client, store)["total"]
    assert (
        listing(client, store, since="2000-01-01T00:00:00Z", until="2999-01-01T00:00:00Z")["total"]
        == everything
    )
    assert listing(client, store, "/api/reports", since="2999-01-01T00:00:00Z")["total"] == 0
    for params, name in [({"order": "loudest"}, "order"), ({"min_risk": "2"}, "min_risk"),
                         ({"outcome": "maybe"}, "outcome"), ({"risk_class": "nope"}, "risk_class")]:  # fmt: skip
        r = client.get("/api/traces", params=params, headers=auth(store))
        assert r.status_code == 400 and name in r.json()["detail"], r.text


def finding_of(store: EventStore, detector_order: int = 0) -> tuple[str, str, str]:
    """(report id, finding id, detector) of a stored finding."""
    found = [(r.report_id, f.finding_id, f.detector) for r in list_reports(store) for f in r.findings]
    return found[detector_order]


def test_feedback_is_an_event_and_never_changes_the_report(client: TestClient, store: EventStore) -> None:
    report_id, finding_id, detector = finding_of(store)
    url = f"/api/reports/{report_id}/findings/{finding_id}/feedback"
    before = client.get(f"/api/reports/{report_id}", headers=auth(store)).content
    label = {"label": "dismissed", "reason": "the quoted record is the customer's own booking"}
    refused = client.post(url, json=label, headers=auth(store, "reader"))
    assert refused.status_code == 403 and "lacks the 'review' scope" in refused.json()["detail"]
    r = client.post(url, json=label, headers=auth(store, "reviewer"))
    assert r.status_code == 201, r.text
    given = r.json()
    assert given["reviewer"]["name"] == "reviewer" and given["detector"] == detector and given["at"]
    events = list(store.read_stream(f"feedback-{report_id}"))
    assert [e.payload for e in events] == [given] and events[0].type == "FindingFeedback"
    assert client.get(f"/api/reports/{report_id}", headers=auth(store)).content == before
    assert load_report(store, report_id).model_dump_json().encode() == before
    history = client.get(f"/api/reports/{report_id}/feedback", headers=auth(store)).json()["feedback"]
    assert history == [given]


def test_bad_feedback_is_refused_with_the_field_named(client: TestClient, store: EventStore) -> None:
    report_id, finding_id, _ = finding_of(store)
    h = auth(store, "reviewer")
    url = f"/api/reports/{report_id}/findings/{finding_id}/feedback"
    for body, field in [({"label": "maybe", "reason": "x"}, "label"), ({"label": "confirmed", "reason": ""}, "reason"),
                        ({"label": "confirmed"}, "reason"), ({"label": "confirmed", "reason": "x" * 2001}, "reason")]:  # fmt: skip
        r = client.post(url, json=body, headers=h)
        assert r.status_code == 400 and field in r.json()["detail"], r.text
    blank = client.post(url, json={"label": "confirmed", "reason": "   "}, headers=h)
    assert blank.status_code == 400 and "needs a reason" in blank.json()["detail"]
    missing = client.post(f"/api/reports/{report_id}/findings/F-404/feedback", json={"label": "confirmed", "reason": "x"}, headers=h)  # fmt: skip
    assert missing.status_code == 404 and "has no finding 'F-404'" in missing.json()["detail"]
    assert finding_id in missing.json()["detail"]  # the hint names the findings it has
    nowhere = client.post("/api/reports/rpt-0/findings/F1/feedback", json={"label": "confirmed", "reason": "x"}, headers=h)  # fmt: skip
    assert nowhere.status_code == 404 and "no report with id 'rpt-0'" in nowhere.json()["detail"]
    # the console's cookie counts for a write only with the console's header, from this origin
    cookie = {"auditor_token": TOKENS[id(store)]["reviewer"]}
    body = {"label": "confirmed", "reason": "x"}
    client.cookies.update(cookie)
    try:
        assert client.post(url, json=body).status_code == 401
        other = {"X-Auditor-Console": "1", "Origin": "https://elsewhere.example"}
        assert client.post(url, json=body, headers=other).status_code == 401
        assert len(list(store.read_stream(f"feedback-{report_id}"))) <= 1  # nothing refused was stored
        console = {"X-Auditor-Console": "1", "Origin": "http://testserver"}  # the console's own page
        given = client.post(url, json=body, headers=console)
        assert given.status_code == 201 and given.json()["reviewer"]["name"] == "reviewer"
    finally:
        client.cookies.clear()


def test_precision_per_detector_on_the_api_and_metrics(client: TestClient, store: EventStore) -> None:
    findings = [(r.report_id, f.finding_id, f.detector) for r in list_reports(store) for f in r.findings]
    detector = findings[0][2]
    same = [f for f in findings if f[2] == detector]
    h = auth(store, "reviewer")
    labels = ["confirmed", "dismissed", "confirmed"]
    for (report_id, finding_id, _), label in zip(same * 3, labels, strict=False):
        r = client.post(f"/api/reports/{report_id}/findings/{finding_id}/feedback",
                        json={"label": label, "reason": f"checked: {label}"}, headers=h)  # fmt: skip
        assert r.status_code == 201
    # each finding counts once, by its latest label
    latest_labels: dict[tuple[str, str], str] = {}
    for (report_id, finding_id, _), label in zip(same * 3, labels, strict=False):
        latest_labels[(report_id, finding_id)] = label
    confirmed = sum(v == "confirmed" for v in latest_labels.values())
    dismissed = len(latest_labels) - confirmed
    rows = client.get("/api/feedback/precision", headers=auth(store)).json()["detectors"]
    row = next(d for d in rows if d["detector"] == detector)
    assert (row["confirmed"], row["dismissed"]) == (confirmed, dismissed)
    assert row["precision"] == pytest.approx(confirmed / (confirmed + dismissed))
    scraped = client.get("/metrics", headers=auth(store, "scraper")).text
    assert (
        f'auditor_detector_precision{{detector="{detector}"}} {confirmed / (confirmed + dismissed)}'
        in scraped
    )
    assert (
        f'auditor_feedback_findings{{detector="{detector}",label="dismissed"}} {float(dismissed)}' in scraped
    )


def test_feedback_export_writes_labelled_findings(
    client: TestClient, store: EventStore, tmp_path: Path
) -> None:
    report_id, finding_id, _ = finding_of(store, -1)
    reason = "the call itself is quoted: cancel_reservation on a basic economy booking"
    r = client.post(f"/api/reports/{report_id}/findings/{finding_id}/feedback",
                    json={"label": "confirmed", "reason": reason}, headers=auth(store, "reviewer"))  # fmt: skip
    assert r.status_code == 201
    out = tmp_path / "labels.jsonl"
    url = store.engine.url.render_as_string(hide_password=False)
    done = run(["--store", url, "feedback", "export", "-o", str(out)], tmp_path)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    labelled = {(x["report_id"], x["finding_id"]) for x in rows}
    events = [e.payload for e in store.read_all(types=["FindingFeedback"])]
    assert labelled == {(p["report_id"], p["finding_id"]) for p in events}
    row = next(x for x in rows if (x["report_id"], x["finding_id"]) == (report_id, finding_id))
    finding = next(f for f in load_report(store, report_id).findings if f.finding_id == finding_id)
    assert row["finding"] == finding.model_dump(mode="json")
    assert [q["quote"] for q in row["quotes"]] == [u.quote for u in finding.evidence]
    assert (row["label"], row["reason"], row["reviewer"]["name"]) == ("confirmed", reason, "reviewer")
    assert row["at"] and f"{len(rows)} labelled findings written" in done.stderr
    table = run(["--store", url, "feedback", "precision", "--json"], tmp_path)
    assert (
        json.loads(table.stdout)
        == client.get("/api/feedback/precision", headers=auth(store)).json()["detectors"]
    )
    # a folder is no output file: one line naming it
    bad = run(["--store", url, "feedback", "export", "-o", str(tmp_path)], tmp_path)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and str(tmp_path) in bad.stderr

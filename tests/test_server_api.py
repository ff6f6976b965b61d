"""The HTTP API over a real seeded store: auth and scopes, search filters, steps, graphs, reports
in every format, submit for audit, problem details, limits, no CORS, server-sent events, repairs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient

from auditor.core.store import open_store
from auditor.surfaces.server import ServerConfig, create_app
from auditor.surfaces.server.tokens import revoke_token
from tests.server_support import HOSTILE_ID, REAL_TRACES, Seeded, seed, seeded_sqlite

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    yield from seeded_sqlite(tmp_path_factory.mktemp("server"))


@pytest.fixture(scope="module")
def client(seeded: Seeded) -> Iterator[TestClient]:
    with TestClient(create_app(ServerConfig(max_body=64 * 1024), store=seeded.store)) as c:
        yield c


def auth(seeded: Seeded, name: str = "reader") -> dict[str, str]:
    return {"Authorization": f"Bearer {seeded.tokens[name]}"}


def test_health_is_the_only_open_endpoint(client: TestClient, seeded: Seeded) -> None:
    assert client.get("/health").json()["status"] == "ok"
    for path in ["/api/traces", "/api/openapi.json", "/api/reports", "/console/", "/console/app.js", "/"]:
        r = client.get(path)
        assert r.status_code == 401, path
    r = client.get("/api/traces")
    assert r.headers["content-type"] == "application/problem+json"
    assert r.json()["detail"].startswith("a bearer token is required")
    assert client.get("/api/traces", headers={"Authorization": "Bearer aud_nope_x"}).status_code == 401
    assert client.get("/api/traces", headers={"Authorization": "Basic abc"}).status_code == 401


def test_scopes_and_revocation(client: TestClient, seeded: Seeded) -> None:
    r = client.get("/api/traces", headers=auth(seeded, "ingester"))
    assert r.status_code == 403 and "lacks the 'read' scope" in r.json()["detail"]
    assert client.get("/api/repairs", headers=auth(seeded, "reader")).status_code == 403
    assert client.post("/api/audit", content=b"{}", headers=auth(seeded, "reader")).status_code == 403
    from auditor.surfaces.server.tokens import create_token

    token, record = create_token(seeded.store, "short-lived", ["read"])
    headers = {"Authorization": f"Bearer {token}"}
    assert client.get("/api/whoami", headers=headers).json()["name"] == "short-lived"
    revoke_token(seeded.store, record.token_id)
    assert client.get("/api/whoami", headers=headers).status_code == 401


def test_tokens_are_stored_hashed(seeded: Seeded) -> None:
    raw = [ev.model_dump_json() for ev in seeded.store.read_stream("tokens")]
    assert raw and all(token not in line for token in seeded.tokens.values() for line in raw)
    assert all("sha256:" in line for line in raw if "TokenCreated" in line)


def test_search_filters(client: TestClient, seeded: Seeded) -> None:
    h = auth(seeded)

    def ids(**params: object) -> set[str]:
        body = client.get("/api/traces", params=params, headers=h).json()
        assert body["total"] == len(body["traces"])
        return {t["trace_id"] for t in body["traces"]}

    everything = ids()
    assert len(everything) >= len(REAL_TRACES) + 1 + 4  # four D1 episodes of the repair's audit cohort
    with_findings = ids(has_findings=True)
    assert with_findings == {t for t, r in seeded.reports.items() if _findings(client, h, r)} | (
        with_findings - set(seeded.reports)
    )
    assert ids(has_findings=False) == everything - with_findings
    magentic = ids(framework="magentic-one")
    assert magentic == {t for t, s in seeded.sources.items() if s in ("46.json", "13.json")}
    assert ids(source="algorithm-generated/87") == {t for t, s in seeded.sources.items() if s == "87.json"}
    assert ids(participant="orchestrator") == magentic
    assert HOSTILE_ID in ids(text="PWNED document")  # words from step content, prefix match
    assert ids(text="zzzqqq-never-said") == set()
    high = ids(severity="high")
    assert high <= with_findings
    assert ids(since="2999-01-01T00:00:00Z") == set()
    assert ids(until="1990-01-01") == set()
    page = client.get("/api/traces", params={"limit": 2, "offset": 1}, headers=h).json()
    assert page["total"] == len(everything) and len(page["traces"]) == 2
    bad = client.get("/api/traces", params={"severity": "urgent"}, headers=h)
    assert bad.status_code == 400 and bad.json()["detail"].startswith("query parameter 'severity'")


def test_counts_stop_past_the_cap(
    client: TestClient, seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A listing counts its matches up to the cap, or past the page it shows when that is further,
    and says whether the count is exact; `exact_total` counts them all."""
    h = auth(seeded)

    def page(path: str = "/api/traces", **params: object) -> tuple[int, bool, int]:
        body = client.get(path, params=params, headers=h).json()
        return body["total"], body["total_exact"], len(body.get("traces", body.get("reports", [])))

    n, exact, _ = page(exact_total=True)
    assert exact and n > 5
    monkeypatch.setattr("auditor.surfaces.server.search.COUNT_CAP", 3)
    assert page(limit=2) == (3, False, 2)  # more than 3
    assert page(limit=2, offset=n - 3) == (n - 1, False, 2)  # more than this page reaches: one left
    assert page(limit=2, offset=n - 2) == (n, True, 2)  # the last page knows the count
    assert page(limit=2, offset=n + 5) == (n, True, 0)  # past the end, still counted
    assert page(limit=2, exact_total=True) == (n, True, 2)
    assert page(framework="magentic-one") == (2, True, 2)  # under the cap: exact
    assert page("/api/reports", limit=1) == (3, False, 1)
    reports, exact, _ = page("/api/reports", limit=1, exact_total=True)
    assert exact and reports >= len(seeded.reports)


def test_deep_pages_are_the_same_pages(
    client: TestClient, seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A deep page (its offset skipped by position alone) holds what the shallow plan would."""
    h = auth(seeded)

    def pages(**params: object) -> list[list[str]]:
        out = []
        for offset in range(0, 12, 3):
            body = client.get(
                "/api/traces", params={**params, "offset": offset, "limit": 3}, headers=h
            ).json()
            out.append([t["trace_id"] for t in body["traces"]])
        return out

    shapes = [{}, {"order": "oldest"}, {"has_findings": True}, {"text": "the"}]
    shallow = [pages(**q) for q in shapes]
    monkeypatch.setattr("auditor.surfaces.server.search.DEEP_OFFSET", 1)
    assert [pages(**q) for q in shapes] == shallow
    assert all(len(p) == 3 for p in shallow[0][:3])  # at least nine traces: pages past the first


@pytest.mark.postgres
def test_search_on_postgres(pg_schema_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same filters through PostgreSQL's stored full-text vector, with counts beside pages."""
    store = open_store(pg_schema_url)
    try:
        seeded = seed(store, tmp_path)
        with TestClient(create_app(store=store)) as c:
            h = auth(seeded)

            def ids(**params: object) -> list[str]:
                body = c.get("/api/traces", params=params, headers=h).json()
                return [t["trace_id"] for t in body["traces"]]

            assert len(ids()) == len(seeded.reports)
            assert ids(text="PWNED document") == [HOSTILE_ID]
            assert ids(text="zzzqqq-never-said") == []
            common = ids(text="the")  # in every real trace: the ordered page, not a scan's order
            assert set(common) >= {t for t in seeded.reports if t != HOSTILE_ID}
            assert common == [t for t in ids() if t in common]
            magentic = {t for t, s in seeded.sources.items() if s in ("46.json", "13.json")}
            assert set(ids(text="ledger")) == magentic == set(ids(participant="orchestrator", text="led"))
            page = c.get("/api/traces", params={"text": "the", "limit": 1, "offset": 1}, headers=h).json()
            assert page["total"] == len(common) and page["traces"][0]["trace_id"] == common[1]
            past = c.get("/api/traces", params={"offset": 50}, headers=h).json()
            assert past["total"] == len(seeded.reports) and past["traces"] == []
            reports = c.get("/api/reports", params={"limit": 1}, headers=h).json()
            assert reports["total"] == len(seeded.reports)
            with c.app.state.index.reader.connect() as conn:  # beside the test schema's search_path
                settings = [
                    conn.exec_driver_sql(f"SHOW {name}").scalar()
                    for name in ("enable_seqscan", "plan_cache_mode")
                ]
            assert settings == ["off", "force_custom_plan"]
            monkeypatch.setattr("auditor.surfaces.server.search.DEEP_OFFSET", 1)
            deep = c.get("/api/traces", params={"text": "the", "limit": 1, "offset": 1}, headers=h).json()
            assert deep["traces"][0]["trace_id"] == common[1] and deep["total"] == len(common)
            monkeypatch.setattr("auditor.surfaces.server.search.COUNT_CAP", 2)
            capped = c.get("/api/traces", params={"text": "the", "limit": 1}, headers=h).json()
            assert (capped["total"], capped["total_exact"]) == (2, False) and capped["traces"][0][
                "trace_id"
            ] == common[0]
    finally:
        store.close()


@pytest.mark.postgres
def test_text_search_answers_alike_on_both_databases(
    pg_schema_url: str, tmp_path: Path, client: TestClient, seeded: Seeded
) -> None:
    """SQLite matches the stored words by pattern, PostgreSQL through its parser, which cuts words
    at underscores: a word found only after an underscore (``money`` of ``send_money``), an
    underscored word and a query of underscores alone give the same traces on both."""
    with seeded.store.engine.connect() as conn:
        stored = {
            w for (row,) in conn.exec_driver_sql("SELECT words FROM server_traces") for w in row.split()
        }
    starts = {w.split("_")[0] for w in stored}
    underscored = sorted(w for w in stored if len([p for p in w.split("_") if p]) >= 2)
    after_only = sorted(p for p in {w.split("_")[-1] for w in underscored} - starts if len(p) >= 2)
    assert underscored and after_only, "the seeded traces hold underscored words"
    queries = [underscored[0], underscored[-1], after_only[0], after_only[-1], "__", "_", "the"]

    def ids(c: TestClient, on: Seeded, q: str) -> set[str]:
        body = c.get("/api/traces", params={"text": q, "limit": 100}, headers=auth(on)).json()
        return {t["trace_id"] for t in body["traces"]}

    store = open_store(pg_schema_url)
    try:
        on_pg = seed(store, tmp_path)
        with TestClient(create_app(store=store)) as pg:
            for q in queries:  # the SQLite store also holds a repair's traces: compare the shared ones
                assert ids(pg, on_pg, q) == ids(client, seeded, q) & set(on_pg.reports), q
            assert ids(client, seeded, after_only[0]), "a word found only after an underscore is found"
            assert ids(client, seeded, "__") == set()
    finally:
        store.close()


def _findings(client: TestClient, h: dict[str, str], report_id: str) -> int:
    return len(client.get(f"/api/reports/{report_id}", headers=h).json()["findings"])


def test_steps_are_paged_in_order(client: TestClient, seeded: Seeded) -> None:
    h = auth(seeded)
    tid = next(t for t, s in seeded.sources.items() if s == "46.json")
    summary = client.get(f"/api/traces/{tid}", headers=h).json()
    first = client.get(f"/api/traces/{tid}/steps", params={"limit": 50}, headers=h).json()
    second = client.get(f"/api/traces/{tid}/steps", params={"offset": 50, "limit": 500}, headers=h).json()
    assert first["total"] == summary["steps"] == len(first["steps"]) + len(second["steps"])
    assert [s["index"] for s in first["steps"] + second["steps"]] == list(range(summary["steps"]))
    missing = client.get("/api/traces/no-such-trace/steps", headers=h)
    assert missing.status_code == 404
    assert (
        missing.json()["detail"]
        == "no trace with id 'no-such-trace' in the store (run 'auditor traces list')"
    )


def test_graph_in_both_modes(client: TestClient, seeded: Seeded) -> None:
    h = auth(seeded)
    annotated = client.get(f"/api/traces/{HOSTILE_ID}/graph", headers=h).json()
    topology = client.get(f"/api/traces/{HOSTILE_ID}/graph", params={"mode": "topology"}, headers=h).json()
    assert annotated["mode"] == "annotated" and "annotations" in annotated
    assert topology["mode"] == "topology" and "annotations" not in topology
    assert [link["step_id"] for link in topology["links"]] == ["h0", "h1", "h2"]
    assert annotated["digest"].startswith("sha256:")


def test_reports_in_every_format(client: TestClient, seeded: Seeded) -> None:
    h = auth(seeded)
    tid = next(t for t, s in seeded.sources.items() if s == "87.json")
    listed = client.get("/api/reports", params={"trace_id": tid}, headers=h).json()
    assert listed["total"] == 1 and listed["reports"][0]["valid"] is True
    rid = listed["reports"][0]["report_id"]
    report = client.get(f"/api/reports/{rid}", headers=h).json()
    assert report["trace_id"] == tid and report["findings"]
    md = client.get(f"/api/reports/{rid}", params={"format": "md"}, headers=h)
    assert md.headers["content-type"].startswith("text/markdown") and rid in md.text
    sarif = client.get(f"/api/reports/{rid}", params={"format": "sarif"}, headers=h).json()
    assert sarif["version"] == "2.1.0" and sarif["runs"][0]["results"]
    html = client.get(f"/api/reports/{rid}", params={"format": "html"}, headers=h)
    assert "sandbox" in html.headers["content-security-policy"]
    validation = client.get(f"/api/reports/{rid}/validation", headers=h).json()
    assert validation["ok"] is True
    unknown = client.get("/api/reports/rpt-nope", headers=h)
    assert unknown.status_code == 404 and unknown.json()["detail"] == (
        "no report with id 'rpt-nope' (run 'auditor reports list')"
    )


def test_submit_for_audit_and_bad_input(client: TestClient, seeded: Seeded) -> None:
    h = auth(seeded, "all")
    body = (REPO / "examples" / "renewal_drift.jsonl").read_bytes()
    r = client.post("/api/audit", params={"filename": "renewal_drift.jsonl"}, content=body, headers=h)
    assert r.status_code == 201, r.text
    result = r.json()["results"][0]
    assert result["trace_id"] == "example-renewal-drift" and result["findings"] >= 1
    found = client.get("/api/traces", params={"text": "Northwind"}, headers=h).json()
    assert [t["report_id"] for t in found["traces"]] == [result["report_id"]]
    before = client.get("/api/traces", headers=h).json()["total"]
    broken = body.replace(b'"index":3', b'"index":"three"', 1)
    bad = client.post("/api/audit", params={"filename": "broken.jsonl"}, content=broken, headers=h)
    assert bad.status_code == 400, bad.text
    detail = bad.json()["detail"]
    assert detail.startswith("broken.jsonl") and "line" in detail and "/tmp" not in detail
    assert client.get("/api/traces", headers=h).json()["total"] == before  # nothing half-stored


def test_body_limit_and_no_cors(client: TestClient, seeded: Seeded) -> None:
    h = auth(seeded, "all")
    big = client.post("/api/audit", content=b"x" * (65 * 1024), headers=h)
    assert big.status_code == 413 and "limit of 65536 bytes" in big.json()["detail"]
    r = client.get("/api/traces", headers={**h, "Origin": "https://evil.example"})
    assert r.status_code == 200 and "access-control-allow-origin" not in r.headers
    pre = client.options(
        "/api/traces", headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "GET"}
    )
    assert "access-control-allow-origin" not in pre.headers and pre.status_code in (401, 405)


def test_report_events_stream(client: TestClient, seeded: Seeded) -> None:
    with client.stream(
        "GET", "/api/events/reports", params={"after": 0, "limit": 2}, headers=auth(seeded)
    ) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        text = "".join(r.iter_text())
    events = [block for block in text.split("\n\n") if block.startswith("id:")]
    assert len(events) == 2
    data = json.loads(events[0].split("data: ", 1)[1])
    assert data["report_id"].startswith("rpt-") and data["trace_id"] in seeded.reports


def test_repairs_with_review_retest_and_pr(client: TestClient, seeded: Seeded) -> None:
    h = auth(seeded, "repairer")
    listed = client.get("/api/repairs", headers=h).json()["repairs"]
    assert [r["repair_id"] for r in listed] == [seeded.repair_id]
    row = listed[0]
    assert set(row["review"]["dimensions"]) == {
        "risk_resolution",
        "plan_fidelity",
        "introduced_risk",
        "proportionality",
    }
    assert row["retest"]["target"]["high"] > row["retest"]["target"]["rate"] and row["decision"]["accepted"]
    detail = client.get(f"/api/repairs/{seeded.repair_id}", headers=h).json()
    assert detail["rounds_detail"][0]["diff"].startswith("--- a/")
    assert detail["pr_proposal"]["branch"] == f"repair/{seeded.repair_id}"
    assert client.get("/api/repairs/rep-nope", headers=h).status_code == 404


def test_openapi_describes_the_api(client: TestClient, seeded: Seeded) -> None:
    spec = client.get("/api/openapi.json", headers=auth(seeded)).json()
    assert spec["openapi"].startswith("3.")
    for path in [
        "/api/traces",
        "/api/traces/{trace_id}/steps",
        "/api/traces/{trace_id}/graph",
        "/api/traces/{trace_id}/tests",
        "/api/reports/{report_id}",
        "/api/audit",
        "/api/repairs",
        "/api/events/reports",
    ]:
        assert path in spec["paths"], path
    assert spec["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"


@pytest.mark.parametrize(
    "where, index",
    [
        ("lower(framework) = 'ag2'", "ix_server_traces_framework_lower"),
        ("max_severity >= 3", "ix_server_traces_severity"),
        ("findings > 0", "ix_server_traces_findings"),
    ],
)
def test_each_filter_counts_through_its_index(tmp_path: Path, where: str, index: str) -> None:
    """A filtered list counts its matches (up to the cap): each filter's count is answered by an index."""
    from auditor.core.store import catch_up
    from auditor.surfaces.server.index import SearchProjection

    store = open_store(f"sqlite:///{tmp_path / 'a.db'}")
    try:
        catch_up(store, SearchProjection())
        with store.engine.connect() as conn:
            plan = " ".join(
                str(row[-1])
                for row in conn.exec_driver_sql(
                    f"EXPLAIN QUERY PLAN SELECT count(*) FROM server_traces WHERE {where}"
                )
            )
        assert index in plan, plan
    finally:
        store.close()

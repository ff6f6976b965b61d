"""Hostile and careless use of what issues 31 and 33 added, third round: the triage filters, the
feedback on findings, the console's sign-in, policies on the service and their selector, the CLI's
outputs. Each case failed before its fix (the module's commits say how); the server cases run
against a real `auditor serve` process over SQLite and PostgreSQL, the CLI cases through the
console entry point.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("uvicorn")
import httpx

from auditor.feedback import record_feedback
from auditor.reports import list_reports
from auditor.store import open_store
from tests.cli_helpers import run
from tests.serve_support import serving
from tests.test_server_triage import seed_runs

REPO = Path(__file__).resolve().parents[1]
POLICIES = REPO / "examples" / "policies"


def seeded(url: str) -> dict[str, str]:
    """Review the triage runs into the store at ``url``; token name -> token."""
    store = open_store(url)
    try:
        return seed_runs(store)
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
    from auditor.policy import load_policy
    from auditor.review import review_file

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

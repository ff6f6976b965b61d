"""`auditor serve --workers 2` on PostgreSQL: two processes catch up one search index side by side
and answer alike, before and after a trace is submitted to either of them."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
import httpx

from auditor.core.store import open_store
from tests.server_support import seed

REPO = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _workers(pid: int) -> list[int]:
    """The worker processes uvicorn spawned under ``pid`` (not its resource tracker)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            child = int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid
            if child and b"spawn_main" in (stat.parent / "cmdline").read_bytes():
                found.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


@pytest.mark.postgres
@pytest.mark.slow
def test_two_workers_share_one_index(pg_schema_url: str, tmp_path: Path) -> None:
    store = open_store(pg_schema_url)
    try:
        seeded = seed(store, tmp_path)
    finally:
        store.close()
    port = _free_port()
    log = tmp_path / "serve.log"
    cmd = [sys.executable, "-m", "auditor.surfaces.cli.main", "serve", "--store", pg_schema_url, "--port", str(port),
           "--workers", "2", "--threads", "4", "--log-level", "warning"]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=log.open("w"))
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        workers: list[int] = []
        while time.monotonic() < deadline and len(workers) < 2:
            assert proc.poll() is None, log.read_text()
            workers = _workers(proc.pid)
            time.sleep(0.2)
        assert len(workers) == 2, log.read_text()
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        reader = {"Authorization": f"Bearer {seeded.tokens['reader']}"}

        def totals() -> set[int]:
            """Totals seen over fresh connections, which the two workers accept between them."""
            seen = set()
            for _ in range(24):
                r = httpx.get(
                    f"{base}/api/traces", params={"exact_total": "true"}, headers=reader, timeout=30
                )
                assert r.status_code == 200, r.text
                seen.add(r.json()["total"])
            return seen

        assert totals() == {len(seeded.reports)}
        body = (REPO / "examples" / "renewal_drift.jsonl").read_bytes()
        ingest = {"Authorization": f"Bearer {seeded.tokens['ingester']}"}
        r = httpx.post(f"{base}/api/audit", params={"filename": "renewal_drift.jsonl"}, content=body,
                       headers=ingest, timeout=60)  # fmt: skip
        assert r.status_code == 201, r.text
        assert totals() == {len(seeded.reports) + 1}  # whichever worker stored it, both list it
        assert "Traceback" not in log.read_text()
    finally:
        proc.terminate()
        proc.wait(30)

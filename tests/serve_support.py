"""A real `auditor serve` in its own process, for tests that must see what a client sees."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.stream_support import wait_until
from tests.test_otlp_kill import process


@contextmanager
def serving(store_url: str, folder: Path, *options: str) -> Iterator[str]:
    """The origin (``http://127.0.0.1:PORT``) of `auditor serve OPTIONS` over ``store_url``, once
    it answers /health; its log goes to ``folder/serve.log``; stopped (SIGTERM) at the end."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    origin = f"http://127.0.0.1:{port}"
    args = ["--store", store_url, "serve", "--port", str(port), "--log-level", "warning", *options]

    def up() -> bool:
        try:
            return httpx.get(f"{origin}/health", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    with process(args, folder / "serve.log", idle=3600.0):
        wait_until(up, 180, "auditor serve", every=0.2)
        yield origin


def flush(origin: str, token: str, otel_trace_id: str) -> list[dict]:
    """POST /api/otlp/flush for one OTel trace: the traces it assembled (the answer must be 200)."""
    r = httpx.post(
        f"{origin}/api/otlp/flush",
        params={"trace_id": otel_trace_id},
        headers={"Authorization": f"Bearer {token}"},
        timeout=120,
    )
    assert r.status_code == 200, r.text
    return r.json()["assembled"]

"""The copy of an input read once (stdin, a FIFO, a device) is bounded and never left behind
(issue 31, item 8).

Real `auditor ingest` processes, each with a TMPDIR of its own so that a leftover copy is seen:
``/dev/zero`` and a stdin larger than the document size limit are refused while they are copied
(exit 2, the input and the limit named, no traceback), and an endless pipe or FIFO that is still
being copied when SIGTERM or SIGHUP arrives ends the process with the shell's code (128 + the
signal) and no copy left. Before, ``/dev/zero`` was copied until the disk was full and SIGTERM
left the copy (11 GB) behind. Nothing is stored in any case; ``auditor store verify`` passes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO

import pytest

from tests.stream_support import wait_until
from tests.test_otlp_kill import REPO

LINE = b'{"record": "step", "index": 1, "actor": "agent", "content": "' + b"x" * 200 + b'"}\n'


def _env(tmp_path: Path, limit_mb: int) -> dict[str, str]:
    spool = tmp_path / "tmp"
    spool.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "AUDITOR_STORE"}
    return env | {"TMPDIR": str(spool), "AUDITOR_MAX_DOCUMENT_MB": str(limit_mb), "COLUMNS": "200"}


def _auditor(tmp_path: Path, *args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "auditor.surfaces.cli.main",
        "--store",
        f"sqlite:///{tmp_path / 'a.db'}",
        *args,
    ]


def _left(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "tmp").rglob("*"))


def _nothing_stored(tmp_path: Path) -> None:
    for args in (["store", "verify"], ["store", "stats", "--json"]):
        proc = subprocess.run(
            _auditor(tmp_path, *args), cwd=REPO, capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
    assert '"events": 0' in proc.stdout, proc.stdout


@pytest.mark.parametrize(
    ("source", "data"),
    [("/dev/zero", None), ("-", LINE * (6 * 1024 * 1024 // len(LINE)))],  # 6 MiB of short lines
    ids=["dev-zero", "stdin"],
)
def test_an_input_read_once_is_refused_at_the_size_limit_while_it_is_copied(
    tmp_path: Path, source: str, data: bytes | None
) -> None:
    proc = subprocess.run(
        _auditor(tmp_path, "ingest", source),
        cwd=REPO,
        env=_env(tmp_path, 4),
        input=data,
        capture_output=True,
        timeout=120,
    )
    stderr = proc.stderr.decode()
    named = "stdin" if source == "-" else source
    assert proc.returncode == 2, stderr
    assert stderr.startswith(f"error: {named}: the input (read once, and copied whole before it is checked)")
    assert "more than 4 MiB, over the limit of 4 MiB" in stderr and "AUDITOR_MAX_DOCUMENT_MB" in stderr
    assert "Traceback" not in stderr
    assert _left(tmp_path) == []
    _nothing_stored(tmp_path)


def _ingesting(tmp_path: Path, source: str) -> subprocess.Popen:
    """`auditor ingest SOURCE` started (stdin a pipe for ``-``), the limit far away (1 GiB)."""
    return subprocess.Popen(
        _auditor(tmp_path, "ingest", source),
        cwd=REPO,
        env=_env(tmp_path, 1024),
        stdin=subprocess.PIPE if source == "-" else None,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _stopped(proc: subprocess.Popen, signum: int, tmp_path: Path) -> None:
    """Send ``signum``: the process ends with the shell's code for it, no copy left, no traceback."""
    proc.send_signal(signum)
    code = proc.wait(60)
    assert _left(tmp_path) == []
    assert code == 128 + signum
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    assert "Traceback" not in stderr, stderr


@contextmanager
def _endless(sink: IO[bytes]) -> Iterator[threading.Event]:
    """Write lines into ``sink`` until the reader goes away; the event is set once 2 MiB went in."""
    fed = threading.Event()

    def feed() -> None:
        sent = 0
        try:
            while True:
                sink.write(LINE * 256)
                sent += len(LINE) * 256
                if sent >= 2 * 1024 * 1024:
                    fed.set()
        except (BrokenPipeError, ValueError, OSError):
            fed.set()

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    try:
        yield fed
    finally:
        with suppress(OSError):
            sink.close()
        writer.join(30)


def _terminated_while_copying(proc: subprocess.Popen, sink: IO[bytes], tmp_path: Path, signum: int) -> None:
    with _endless(sink) as fed:
        assert fed.wait(60)
        wait_until(lambda: any(p.is_file() and p.stat().st_size > 0 for p in _left(tmp_path)), 60, "the copy")
        _stopped(proc, signum, tmp_path)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_signal_while_an_endless_stdin_is_copied_leaves_no_copy(tmp_path: Path, signum: int) -> None:
    proc = _ingesting(tmp_path, "-")
    assert proc.stdin is not None
    _terminated_while_copying(proc, proc.stdin, tmp_path, signum)
    _nothing_stored(tmp_path)


def test_sigterm_while_an_endless_fifo_is_copied_leaves_no_copy(tmp_path: Path) -> None:
    fifo = tmp_path / "agent.fifo"
    os.mkfifo(fifo)
    proc = _ingesting(tmp_path, str(fifo))
    deadline = time.monotonic() + 60
    while True:  # open the writing end once the process has opened the reading end
        try:
            sink = open(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK), "wb")  # noqa: SIM115
            break
        except OSError:
            assert time.monotonic() < deadline and proc.poll() is None, "auditor never opened the FIFO"
            time.sleep(0.05)
    os.set_blocking(sink.fileno(), True)
    _terminated_while_copying(proc, sink, tmp_path, signal.SIGTERM)
    _nothing_stored(tmp_path)


def _canonical(steps: int) -> bytes:
    """A canonical trace of ``steps`` steps: seconds to check and store, even on a fast machine."""
    header = {"record": "header", "format_version": 1, "trace_id": "spooled-and-stopped", "withheld": []}
    lines = [json.dumps(header)]
    for i in range(steps):
        step = {"record": "step", "step_id": f"s{i}", "index": i, "actor": "agent", "kind": "message"}
        lines.append(json.dumps({**step, "content": f"step {i} " + "words " * 20}))
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.parametrize("phase", ["check", "write"])
def test_sigterm_after_the_copy_still_removes_it_and_stores_nothing(tmp_path: Path, phase: str) -> None:
    """SIGTERM once stdin is copied: while the trace is checked, or while its transaction is open
    (the WAL grows), the copy goes and the transaction rolls back."""
    proc = _ingesting(tmp_path, "-")
    assert proc.stdin is not None
    proc.stdin.write(_canonical(60_000))
    proc.stdin.close()
    if phase == "write":
        wal = tmp_path / "a.db-wal"
        wait_until(lambda: wal.exists() and wal.stat().st_size > 4 * 1024 * 1024, 120, "the transaction")
    assert proc.poll() is None, "the ingest ended before the signal"
    _stopped(proc, signal.SIGTERM, tmp_path)
    _nothing_stored(tmp_path)

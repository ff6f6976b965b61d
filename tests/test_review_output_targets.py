"""`review -o` writes regular files only (issue 22, item 5): a symlink is followed, a device or a
FIFO is refused without being replaced, `-o -` is standard output."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from tests.cli_helpers import run
from tests.conftest import REPO

EXAMPLE = REPO / "examples" / "renewal_drift.jsonl"


def test_a_symlink_is_followed_and_stays_a_link(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    link = tmp_path / "latest.json"
    link.symlink_to(target.name)
    done = run(["review", str(EXAMPLE), "-o", str(link)], tmp_path)
    assert done.returncode == 1, done.stderr
    assert link.is_symlink() and json.loads(target.read_text())["trace_id"] == "example-renewal-drift"


def test_a_fifo_or_device_is_refused_and_left_alone(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    done = run(["review", str(EXAMPLE), "-o", str(fifo)], tmp_path)
    assert done.returncode == 2 and "not a regular file" in done.stderr
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    null = run(["review", str(EXAMPLE), "-o", "/dev/null"], tmp_path)
    assert null.returncode == 2 and "not a regular file" in null.stderr
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_dash_writes_the_report_to_stdout(tmp_path: Path) -> None:
    done = run(["review", str(EXAMPLE), "-o", "-", "--format", "json"], tmp_path)
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["trace_id"] == "example-renewal-drift"
    assert not (tmp_path / "-").exists()

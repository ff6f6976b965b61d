"""`review -o` writes regular files only (issue 22, item 5): a symlink is followed, a device or a
FIFO is refused without being replaced, `-o -` is standard output.

Each case runs on a store already holding a real Who&When trace: afterwards the hash chain verifies
(`auditor store verify` says intact) and that trace's events are as they were. A refused output
stores nothing at all: the target is checked before the review appends anything."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from ingest import ingest_path
from tests.cli_helpers import run
from tests.conftest import DATA, REPO
from tests.test_hostile_inputs import Snapshot, _snapshot, cli_store, cli_unchanged

EXAMPLE = REPO / "examples" / "renewal_drift.jsonl"
WHOWHEN = DATA / "whowhen" / "algorithm-generated" / "87.json"


def _seeded(folder: Path) -> Snapshot:
    """The CLI's store in ``folder`` holding a real Who&When trace before the case."""
    with cli_store(folder) as store:
        ingest_path(store, WHOWHEN)
        return _snapshot(store)


def test_a_symlink_is_followed_and_stays_a_link(tmp_path: Path) -> None:
    before = _seeded(tmp_path)
    target = tmp_path / "report.json"
    link = tmp_path / "latest.json"
    link.symlink_to(target.name)
    done = run(["review", str(EXAMPLE), "-o", str(link)], tmp_path)
    assert done.returncode == 1, done.stderr
    assert link.is_symlink() and json.loads(target.read_text())["trace_id"] == "example-renewal-drift"
    cli_unchanged(tmp_path, before, stored_nothing=False)  # the example and its report added


def test_a_fifo_or_device_is_refused_and_left_alone(tmp_path: Path) -> None:
    """Refused with exit 2 before the review appends anything: the store is as it was."""
    before = _seeded(tmp_path)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    done = run(["review", str(EXAMPLE), "-o", str(fifo)], tmp_path)
    assert done.returncode == 2 and "not a regular file" in done.stderr
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    before = cli_unchanged(tmp_path, before)  # refused before the review: nothing stored
    null = run(["review", str(EXAMPLE), "-o", "/dev/null"], tmp_path)
    assert null.returncode == 2 and "not a regular file" in null.stderr
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    cli_unchanged(tmp_path, before)


def test_dash_writes_the_report_to_stdout(tmp_path: Path) -> None:
    before = _seeded(tmp_path)
    done = run(["review", str(EXAMPLE), "-o", "-", "--format", "json"], tmp_path)
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["trace_id"] == "example-renewal-drift"
    assert not (tmp_path / "-").exists()
    cli_unchanged(tmp_path, before, stored_nothing=False)  # the example and its report added

"""Run the `auditor` CLI as a user does: a subprocess in a working directory of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def run(args: list[str], cwd: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "AUDITOR_STORE"} | {"COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "auditor.cli.main", *args],
        cwd=cwd,
        input=stdin.decode() if stdin is not None else None,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def events_in(cwd: Path) -> int:
    out = run(["store", "stats", "--json"], cwd)
    return json.loads(out.stdout)["events"]

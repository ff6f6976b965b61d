"""Run the `auditor` CLI as a user does, in a working directory of its own.

``run`` calls the console entry point (``auditor.surfaces.cli.main.run``) in this process through click's
CliRunner isolation: the same argument parsing, the same mapping of errors to one line on stderr and
an exit code, a fresh rich console as a new process would have (COLUMNS=200, no terminal), and every
store the command opened closed afterwards as the interpreter's exit would. That saves an
interpreter start and the imports (1.5-4 s) per case. ``run_process`` starts a real interpreter: for
what only a process shows (a real stdin pipe read through ``/dev/stdin``, signals, import-time
behaviour).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ENV = {"AUDITOR_STORE": None, "COLUMNS": "200"}


def run(args: list[str], cwd: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    """`auditor ARGS` in ``cwd``, in-process; returncode, stdout and stderr as a process gives them."""
    from typer.testing import CliRunner

    runner = CliRunner()
    with (
        _working_dir(cwd),
        runner.isolation(input=stdin, env=ENV) as (out, err, _),
        _fresh_consoles(),
        _stores_closed(),
    ):
        code = _entry_point(args)
        sys.stdout.flush()
        sys.stderr.flush()
        stdout, stderr = out.getvalue(), err.getvalue()
    return subprocess.CompletedProcess(
        ["auditor", *args], code, stdout.decode(errors="replace"), stderr.decode(errors="replace")
    )


def run_process(args: list[str], cwd: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m auditor.surfaces.cli.main ARGS` in ``cwd``: a real interpreter, real pipes."""
    env = {k: v for k, v in os.environ.items() if k != "AUDITOR_STORE"} | {"COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "auditor.surfaces.cli.main", *args],
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


def _entry_point(args: list[str]) -> int:
    """The exit status the interpreter would report: SystemExit's code, 1 and a traceback on stderr
    for an exception that escapes (as Python prints it)."""
    from auditor.surfaces.cli.main import run as console_script

    argv = sys.argv
    sys.argv = ["auditor", *args]
    try:
        console_script()
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)
        return 1
    except Exception:  # an uncaught error: what a user would see is the traceback and status 1
        traceback.print_exc()
        return 1
    finally:
        sys.argv = argv
    return 0


@contextlib.contextmanager
def _working_dir(path: Path) -> Iterator[None]:
    before = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


@contextlib.contextmanager
def _fresh_consoles() -> Iterator[None]:
    """New rich consoles in every CLI module for this call: width, colour and terminal detection
    happen at construction, so consoles made under pytest's streams must not leak into the run."""
    from rich.console import Console

    from auditor.surfaces.cli import common

    old = {"console": common.console, "err_console": common.err_console}
    new: dict[str, Any] = {"console": Console(), "err_console": Console(stderr=True)}
    patched = [
        (module, name)
        for module in list(sys.modules.values())
        if getattr(module, "__name__", "").startswith("auditor.surfaces.cli")
        for name in old
        if getattr(module, name, None) is old[name]
    ]
    for module, name in patched:
        setattr(module, name, new[name])
    try:
        yield
    finally:
        for module, name in patched:
            setattr(module, name, old[name])


@contextlib.contextmanager
def _stores_closed() -> Iterator[None]:
    """Close the stores the command opened when it ends, as the end of a process does (an open
    PostgreSQL pool would otherwise outlive the test's schema)."""
    import auditor.core.store

    opened: list[Any] = []
    original = auditor.core.store.open_store

    def tracking(*args: Any, **kwargs: Any) -> Any:
        store = original(*args, **kwargs)
        opened.append(store)
        return store

    auditor.core.store.open_store = tracking
    try:
        yield
    finally:
        auditor.core.store.open_store = original
        for store in opened:
            store.close()

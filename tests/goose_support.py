"""Goose's session store for the tests: the real recorded store (its ``sqlite3 .dump``, committed
as text under tests/fixtures/real/goose) loaded into a database file, as Goose keeps it."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from tests.conftest import REPO

DUMP = REPO / "tests" / "fixtures" / "real" / "goose" / "shell_and_mcp_tool_error_sessions_db.sql"


def goose_store(folder: Path, change: Callable[[sqlite3.Connection], object] | None = None) -> Path:
    """``folder/sessions.db`` built from the dump (``change`` run on it first)."""
    path = folder / "sessions.db"
    path.unlink(missing_ok=True)
    db = sqlite3.connect(path)
    with db:
        db.executescript(DUMP.read_text(encoding="utf-8"))
        if change is not None:
            change(db)
    db.close()
    return path

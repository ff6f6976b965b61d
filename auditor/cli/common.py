"""Shared CLI state and output helpers: human tables by default, --json for machines."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table


@dataclass
class CliState:
    store_url: str | None = None
    debug: bool = False


state = CliState()
console = Console()
err_console = Console(stderr=True)


def open_cli_store():  # -> auditor.store.EventStore
    from auditor.store import open_store

    return open_store(state.store_url)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str, ensure_ascii=False) + "\n")


def print_table(title: str | None, columns: list[str], rows: list[list[Any]]) -> None:
    table = Table(title=title)
    for col in columns:
        table.add_column(col)
    for row in rows:
        table.add_row(*["" if v is None else str(v) for v in row])
    console.print(table)

"""The README's input-format table: every importer has a row, and every row's example command
names a file that ships in the repository (a user's clone has no shared data folder) and is
detected as that row's format (issues 21, 32)."""

from __future__ import annotations

import re

import pytest

from ingest import detect, names
from tests.conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")
SECTION = README[
    README.index("## Input formats") : README.index("\n## ", README.index("## Input formats") + 1)
]
ROWS = [line for line in SECTION.splitlines() if line.startswith("| `")]


def _row(line: str) -> tuple[list[str], str]:
    """(formats the row names in its first cell, its example command)."""
    cells = [c.strip() for c in line.strip("|").split("|")]
    return re.findall(r"`([a-z0-9-]+)`", cells[0]), cells[-1].strip("`")


def test_every_importer_has_a_row_and_every_row_an_example() -> None:
    listed = [name for line in ROWS for name in _row(line)[0]]
    assert sorted(listed) == sorted(names())
    assert all(_row(line)[1].startswith("auditor ") for line in ROWS)


@pytest.mark.parametrize("line", ROWS, ids=[", ".join(_row(r)[0]) for r in ROWS])
def test_each_example_reads_a_file_of_its_format(line: str) -> None:
    formats, command = _row(line)
    path = REPO / command.split()[-1]
    assert path.resolve().is_relative_to(REPO) and path.is_file(), command
    assert detect(path)[0] in formats, (command, detect(path))

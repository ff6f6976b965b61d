"""The review path's memory work changes no report: every report of the golden corpus is
byte-identical to the one the review path filed before that work (``tests/review_golden.py``).
"""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from tests.review_golden import Case, corpus, golden_path, read_golden, review_text

CASES = corpus()


def test_the_golden_corpus_is_complete() -> None:
    """Every case has its golden file and every golden file its case (a renamed input is noticed)."""
    names = {golden_path(c).name for c in CASES}
    stored = {p.name for p in golden_path(CASES[0]).parent.glob("*.json.gz")}
    assert names == stored, (sorted(names - stored), sorted(stored - names))
    assert len(CASES) > 60


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_report_is_byte_identical(case: Case, tmp_path: Path) -> None:
    expected = read_golden(case)
    actual = review_text(case, tmp_path)
    if actual != expected:
        diff = difflib.unified_diff(
            expected.splitlines(), actual.splitlines(), "golden", "now", n=2, lineterm=""
        )
        pytest.fail(f"{case.name}: the report changed\n" + "\n".join(list(diff)[:60]))


def test_no_detector_fails_on_the_golden_corpus() -> None:
    """A detector that raises is noted in the report and files nothing: on the golden corpus (real
    framework logs among them) none may. A failed result with no text once made the relay detector
    raise on an Inspect log, losing its findings for the whole run."""
    failed = [
        (c.name, line.strip())
        for c in CASES
        for line in read_golden(c).splitlines()
        if "detector " in line and " failed: " in line
    ]
    assert failed == []

"""The one Markdown table writer: the layout every document shares, and a short row refused."""

from __future__ import annotations

import pytest

from auditor.core.markdown import markdown_table


def test_header_separator_and_rows_with_cells_as_given() -> None:
    lines = markdown_table(["#", "text"], [[1, "a\\|b"], [2, ""]])
    assert lines == ["| # | text |", "|---|---|", "| 1 | a\\|b |", "| 2 |  |"]


def test_no_rows_is_header_and_separator() -> None:
    assert markdown_table(["a", "b", "c"], []) == ["| a | b | c |", "|---|---|---|"]


def test_a_row_that_does_not_fit_the_columns_is_refused() -> None:
    with pytest.raises(ValueError, match="a row of 1 cells under 2 columns"):
        markdown_table(["a", "b"], [["only"]])

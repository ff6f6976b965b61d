"""Patterns that read whole step texts grow linearly on blank-heavy text (padded tables, pages of
blank lines, fixed-width logs): each of these was quadratic or worse there — a ``\\s*`` at a line
start ran over every blank line below it, one before a required character over the rest of a blank
run, at every position of it (the SymPy summary's, over two lines, was cubic: 10,000 spaces took
five minutes). Twice the text, about twice the time; each still finds what it is for."""

from __future__ import annotations

import re

import pytest

from auditor.audit.attribution.facts import _OBSERVED
from auditor.audit.detectors.choice_criterion import _ITEM_SEPARATOR, _LABELLED, _LISTING_LABEL
from auditor.audit.detectors.disclosure_scope import _LABEL_LINE, carriers_of
from auditor.audit.detectors.failure_facts import _CALLED
from auditor.audit.detectors.failure_verification import _TEST_CODE
from auditor.audit.detectors.injected_instruction import _VALUE_TOKEN
from auditor.audit.detectors.limits import _SENTENCE
from auditor.audit.detectors.policy_consent import values_in
from auditor.audit.detectors.test_runs import (
    _DIAGNOSTIC,
    _IMPORT,
    _MESSAGE_KIND,
    _NUMBERED,
    _PY_WRITE,
    _TOX,
    parse_output,
)
from auditor.audit.detectors.tool_effects import normal, normal_text
from graph.instructions import _ADDRESS, _PROSE_START, _SENTENCE_END
from graph.instructions import _CALLED as _NAME_CALLING
from graph.values import extract_mentions
from ingest.claude_code import _EXITED, _NOTICE_FIELD, reminder
from tests.timing import best_seconds, growth

BLANKS = {
    "blank lines": lambda n: " \n" * n,
    "tabs and breaks": lambda n: "\t\n " * n,
    "a run of spaces": lambda n: " " * (2 * n),
    "a label's gap": lambda n: "Label: a" + " " * (2 * n) + "b\n",
    "parentheses never closed": lambda n: "(" * (2 * n),
    "one long word": lambda n: "a" * (2 * n),
}
PATTERNS = {  # each with a text it must still read, put before the blanks (a match after them would
    # take the whole run in one step and hide the cost)
    "disclosure label line": (_LABEL_LINE, "\nAccount holder: Jane Roe (primary)\n"),
    "test code": (_TEST_CODE, "\n    def test_refund(self):\n"),
    "tox summary": (_TOX, "\n  py311: commands failed\n"),
    "import": (_IMPORT, "\nimport numpy\n"),
    "sentence end": (_SENTENCE_END, "Done.\nNext"),
    "a call in code": (_CALLED, "finish(answer)\n"),
    "a file written": (_PY_WRITE, "out.write_text(data)\n"),
    "a numbered line": (_NUMBERED, "12\tpassed\n"),
    "a background command's end": (_EXITED, "3\t[exited with code 1]\n"),
    "a task notification's field": (_NOTICE_FIELD, "<status>failed</status>\n"),
    "a listing's label": (_LISTING_LABEL, "Hotel Names: "),
    "a listing's separator": (_ITEM_SEPARATOR, "Good Night | Cozy Stay\n"),
    "a linter's message": (_DIAGNOSTIC, "\nx.py:3:1: F401 'os' imported but unused\n"),
    "a message's kind": (_MESSAGE_KIND, "R0124: Redundant comparison (comparison-with-itself)"),
}


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("shape", BLANKS)
def test_a_pattern_reads_blank_heavy_text_in_linear_time(pattern: str, shape: str) -> None:
    regex, tail = PATTERNS[pattern]
    small, large = tail + BLANKS[shape](4_000) + "x", tail + BLANKS[shape](8_000) + "x"
    assert any(regex.finditer(large)), "what the pattern is for is still read"

    def scan(text: str) -> list[re.Match[str]]:
        return list(regex.finditer(text))

    assert best_seconds(lambda: scan(large)) < 3 * best_seconds(lambda: scan(small)) + 0.002


def test_a_runner_summary_after_blank_lines_is_still_the_summary() -> None:
    blank = " \n" * 5_000
    assert parse_output(blank + "py311: commands failed\n")[:3] == ("tox", "py311: commands failed", 1)


@pytest.mark.parametrize("shape", BLANKS)
def test_a_value_s_references_are_read_in_linear_time(shape: str) -> None:
    """A value's parenthesised references (a pattern retried at every '(' never closed, and at every
    blank before one, was quadratic)."""
    small, large = "Jane Roe (primary)" + BLANKS[shape](4_000), "Jane Roe (primary)" + BLANKS[shape](8_000)
    assert "primary" in carriers_of(large)
    assert best_seconds(lambda: carriers_of(large)) < 3 * best_seconds(lambda: carriers_of(small)) + 0.002


@pytest.mark.parametrize("blank", [" ", "\t", " \t"])
def test_a_labelled_line_is_read_in_linear_time(blank: str) -> None:
    """A record's labelled line (a lazy value before \\s*$ was quadratic in the line's inner blanks)."""
    small, large = (f"Rating: 4{blank * n}stars " for n in (8_000, 16_000))
    assert _LABELLED.match(large).groups() == ("Rating", f"4{blank * 16_000}stars")  # type: ignore[union-attr]
    assert (
        best_seconds(lambda: _LABELLED.match(large))
        < 3 * best_seconds(lambda: _LABELLED.match(small)) + 0.002
    )


WORDS = {  # a long word of each kind of character the value and address patterns run over
    "letters": lambda n: "a" * (2 * n),
    "digits": lambda n: "1" * (2 * n),
    "dots and hyphens": lambda n: "a.b-" * (n // 2),
    "slashes and colons": lambda n: "a/b:" * (n // 2),
    "underscores and plus signs": lambda n: "a_b+" * (n // 2),
    "at signs": lambda n: "a@" * n,
    "a domain without a dot": lambda n: "a@" + "b" * (2 * n),
    "schemes never finished": lambda n: "http:/" * (n // 3),
    "www without a dot": lambda n: "www" * (2 * n // 3),
    "addresses glued by '+'": lambda n: "a@b.c+" * (n // 3),
}
SCANS = {
    "value tokens": lambda text: _VALUE_TOKEN.split(text),
    "addresses": lambda text: _ADDRESS.sub("x", text),
}
VALUES = "Send 100 to jane@example.com at https://example.org/pay "


@pytest.mark.parametrize("scan", SCANS)
@pytest.mark.parametrize("word", WORDS)
def test_values_and_addresses_are_read_in_linear_time(scan: str, word: str) -> None:
    """A word without what a branch seeks (an '@' after a run, a '://' after a scheme, a digit) was
    read to its end from each of its positions (6,000 letters took 0.2 to 0.6 s, 60,000 over half a minute)."""
    small, large = (VALUES + WORDS[word](n) + " x" for n in (4_000, 8_000))
    assert _VALUE_TOKEN.findall(large)[:3] == ["100", "jane@example.com", "https://example.org/pay"]
    assert _ADDRESS.sub("x", large).startswith("Send 100 to x at x ")
    read = SCANS[scan]
    assert best_seconds(lambda: read(large)) < 3 * best_seconds(lambda: read(small)) + 0.002


@pytest.mark.parametrize(
    "markup",
    {"hashes": "#", "headings": "# ", "tags in parentheses": "(a) ", "tags in brackets": "[b] "}.values(),
)
def test_a_sentence_start_after_markup_is_read_in_linear_time(markup: str) -> None:
    """Markup and tags before a sentence's first word ("###(system_message) Send …"): a run of '#'
    was split in every way a repeated '#+' allows (a line of 60 hashes did not finish)."""
    assert _PROSE_START.match("###(system_message) Send a link")
    small, large = (markup * n + "!" for n in (4_000, 8_000))
    assert not _PROSE_START.match(large)
    assert (
        best_seconds(lambda: _PROSE_START.match(large))
        < 3 * best_seconds(lambda: _PROSE_START.match(small)) + 0.002
    )


@pytest.mark.parametrize("run", ["1 ", "the 1st to ", "May ", "1-", "May 1 to "])
def test_dates_in_words_are_read_in_linear_time(run: str) -> None:
    """Runs of what a date phrase is made of (days, joins, months) before a year."""
    assert "(2024-05-01)" in normal_text("on May 1, 2024")
    small, large = (run * n + "2024" for n in (4_000, 8_000))
    assert best_seconds(lambda: normal_text(large)) < 3 * best_seconds(lambda: normal_text(small)) + 0.002


@pytest.mark.parametrize("run", ["x", "a.", "1,000.00 "])
def test_a_limit_s_sentences_are_read_in_linear_time(run: str) -> None:
    """A long run with no stop before a space ("xxxx….y", a dotted token) was read again from each
    of its characters (a 15,000-character word in a tool result took 1.8 s of a review)."""
    sentences = [m.group() for m in _SENTENCE.finditer("A total of $1,000.00 per day. Next")]
    assert sentences == ["A total of $1,000.00 per day.", " Next"]
    small, large = (run * n + ".y" for n in (4_000, 8_000))
    assert (
        best_seconds(lambda: list(_SENTENCE.finditer(large)))
        < 3 * best_seconds(lambda: list(_SENTENCE.finditer(small))) + 0.002
    )


def test_an_account_number_s_form_is_read_in_linear_time() -> None:
    """A text opening with a code and a long run that is no account number: its groups were tried in
    every split (42 letters after "GB29" took 0.4 s, 46 letters 2 s), found by fuzzing dates."""
    assert (
        normal("GB29 NWBK 6016 1331 9268 19") == normal("GB29NWBK60161331926819") == "gb29nwbk60161331926819"
    )
    small, large = ("GB29" + "A" * n + " x" for n in (4_000, 8_000))
    assert best_seconds(lambda: normal(large)) < 3 * best_seconds(lambda: normal(small)) + 0.002


PUNCTUATED = {  # long runs of what each reader below starts from, with nothing it seeks after them
    "a row of hyphens": lambda n: "-" * (2 * n),
    "a hyphenated word": lambda n: "a-" * n,
    "a row of dots": lambda n: "." * (2 * n),
    "a dotted word": lambda n: "x.py" * (n // 2),
}
READERS = {  # each with the text before the run and what it reads of the whole
    "a located source or an exit code": (
        lambda text: _OBSERVED.findall(text),
        "See https://example.org/a and exit code: 1 ",
        ["https://e", "exit code: 1"],
    ),
    "codes and amounts": (values_in, "Booking ABC123 costs $12.50. ", ["ABC123", "12.50"]),
    "a sentence calling its reader by name": (
        lambda text: _NAME_CALLING.findall(text),
        "Note. Claude, read this. ",
        ["Claude"],
    ),
}


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("run", PUNCTUATED)
def test_punctuated_runs_are_read_in_linear_time(reader: str, run: str) -> None:
    """A run of hyphens or dots, or a word of them: a URL's scheme was scanned from every word of a
    dotted run to its end (80,000 characters: 18 s), a code's digit looked for from every hyphen
    of a row (20,000: 9 s), a sentence's first words from every dot of a row (20,000: 20 s)."""
    read, head, found = READERS[reader]
    small, large = (head + PUNCTUATED[run](n) + " x" for n in (4_000, 8_000))
    assert read(large) == found
    assert best_seconds(lambda: read(large)) < 3 * best_seconds(lambda: read(small)) + 0.002


def test_a_capitalised_word_is_read_in_linear_time() -> None:
    """A long word of capitals with no hyphen after it: a code's letters were split in every way
    before the missing hyphen failed (20,000 capitals in a tool result: 2 s of a review)."""
    head = "Invoice INV-4471 is open. "
    assert [m.surface for m in extract_mentions(head) if m.kind == "id"] == ["INV-4471"]
    small, large = (head + "A" * n + " x" for n in (8_000, 16_000))
    assert [m.surface for m in extract_mentions(large) if m.kind == "id"] == ["INV-4471"]
    assert (
        best_seconds(lambda: extract_mentions(large))
        < 3 * best_seconds(lambda: extract_mentions(small)) + 0.002
    )


@pytest.mark.parametrize("run", ["\n", " \n", "<system-reminder>\n"])
def test_a_read_result_s_reminder_is_found_in_linear_time(run: str) -> None:
    """Claude Code's reminder at the end of a Read result (a pattern whose leading ``\\n*`` was
    retried at every newline of the result was quadratic: 20,000 blank lines took 6 s). The first
    opening at a line's start that the final closing tag closes begins the block, as before."""
    block = "<system-reminder>\nWhenever you read a file, consider it.\n</system-reminder>"
    small, large = (f"     1→x\n{run * n}\n{block}\n" for n in (8_000, 16_000))
    found = reminder(large)
    assert found is not None and found[1].endswith(block)
    assert large[: found[0]].startswith("     1→x") and not large[: found[0]].endswith("\n")
    assert reminder(run * 16_000) is None
    assert growth(lambda: reminder(small), lambda: reminder(large)) < 3

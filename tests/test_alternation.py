"""The scanned alternations (graph.alternation) give the matches of the regexes they replace: the
value tokens of the injected-instruction detector and the addresses of graph.instructions were one
regex each, quadratic on a long word without what they seek. The regexes stay here as the reference;
every span, ``findall``, ``split`` and ``sub`` must agree with them, on random texts dense in the
characters the patterns turn on and on real agent runs."""

from __future__ import annotations

import random
import re

import pytest

from auditor.audit.detectors.injected_instruction import _VALUE_TOKEN
from graph.instructions import _ADDRESS
from tests.conftest import DATA

VALUE_TOKEN = re.compile(r"[\w.@/:+-]*\d[\w.@/:+-]*|[\w.+-]+@[\w.-]+|(?:https?://|www\.)\S+", re.I)
ADDRESS = re.compile(r"(?:[a-z][a-z0-9+.-]*://|www\.)\S+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+", re.I)

# what the patterns turn on: letters (those of the prefixes, upper case too), digits, the run
# characters . @ / : + - _, blanks, the prefixes whole, and Unicode whose classes or case folding
# differ from ASCII's: 'ſ' and the Kelvin sign fold to s and k, '²' is a word character but no digit,
# '٣' a digit, a no-break space and U+001C are blanks
PIECES = [
    *'abhtpswHWSTPA0159.@/:+-_ \n,;("',
    *["http", "https", "HTTPS", "://", "www.", "WWW.", "ftp", "a@b.c", "x1"],
    *["é", "ſ", "\u212a", "İ", "ı", "²", "٣", "\xa0", "\x1c"],
]
DENSE = ["a", "1", "@", ".", "+", ":", "/", "-", "_", "w", "www.", "http", "://", " ", "é", "²"]


def random_texts(pieces: list[str], count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 30))) for _ in range(count)]


def assert_same_as_the_regexes(text: str) -> None:
    assert list(_VALUE_TOKEN.spans(text)) == [m.span() for m in VALUE_TOKEN.finditer(text)], text
    assert _VALUE_TOKEN.findall(text) == VALUE_TOKEN.findall(text), text
    assert _VALUE_TOKEN.split(text) == VALUE_TOKEN.split(text), text
    assert list(_ADDRESS.spans(text)) == [m.span() for m in ADDRESS.finditer(text)], text
    assert _ADDRESS.sub("x", text) == ADDRESS.sub("x", text), text


@pytest.mark.parametrize(("pieces", "seed"), [(PIECES, 1), (DENSE, 2)])
def test_random_texts_match_as_the_regexes_match(pieces: list[str], seed: int) -> None:
    for text in random_texts(pieces, 15_000, seed):
        assert_same_as_the_regexes(text)


def test_real_runs_match_as_the_regexes_match() -> None:
    runs = sorted((DATA / "agentdojo" / "runs").glob("*.json"))
    assert len(runs) > 100
    for path in runs:
        assert_same_as_the_regexes(path.read_text(encoding="utf-8"))


def test_where_a_run_is_entered_after_a_match_it_is_read_from_there() -> None:
    """The cases an anchor at a run's start would get wrong: an address glued after another by '+'
    (the second starts where the first stopped), a scheme after a digit."""
    assert _VALUE_TOKEN.findall("mail a@b+c@d now") == ["a@b", "+c@d"]
    assert _ADDRESS.sub("x", "to a@b.c+d@e.f or 1http://x.y") == "to xx or 1x"
    assert _ADDRESS.sub("x", "a@b.c+d://x") == "x+x"

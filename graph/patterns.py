"""The regular expressions of value extraction, shaped for speed over large texts.

Each pattern starts with a literal or a character set wherever possible, so the regex engine
skips ahead in C instead of trying every alternative at every position; word boundaries that
would defeat that are checked after the first character (a look-behind) or in Python. Phrase
lists compile to tries. The passes run once over the whole trace text joined together.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from graph.vocab import HEDGES, MONTHS, STATUS_SYNONYMS


def phrase_pattern(phrases: list[str] | tuple[str, ...]) -> str:
    """A regex alternation of phrases shaped as a trie (shared prefixes factored out)."""
    root: dict[str, dict] = {}
    for phrase in phrases:
        node = root
        for ch in phrase.lower().replace("’", "'"):
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict[str, dict]) -> str:
        alts = [
            ("['’]" if ch == "'" else re.escape(ch)) + emit(sub) for ch, sub in sorted(node.items()) if ch
        ]
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        return f"(?:{body})?" if "" in node else body

    return emit(root)


STATUS_OF = {p.lower(): canon for canon, phrases in STATUS_SYNONYMS.items() for p in phrases}
_MONTH = phrase_pattern(list(MONTHS))

# case-sensitive passes over the original text, in priority order (earlier wins an overlap)
EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
UUID = re.compile(
    r"[0-9a-fA-F](?<![\w-][0-9a-fA-F])[0-9a-fA-F]{7}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
)
ISODATE = r"\d(?<!\w\d)\d{3}-\d{2}-\d{2}\b"
# ids: codes such as INV-4471 and tickets such as #1234, as two passes (each then starts with a
# character set or a literal, which the regex engine skips ahead to; the two never overlap). A
# code's letters and digits are taken whole before its hyphen ("[A-Z]+[A-Z0-9]*" split a long
# capitalised word in every way before failing: 20,000 capitals took 2 seconds)
ID_CODE = r"[A-Z](?<!\w[A-Z])[A-Z][A-Z0-9]*+-\d[\w-]*"
ID_TICKET = r"#\d{3,}\b"
USDATE = r"\d(?<!\w\d)\d?/\d{1,2}/\d{4}\b"
# amounts: a number not inside a word or a dotted or dashed token, with an optional currency
# before it, a magnitude and a currency after. Two passes, each starting with literals or a
# character set (the not-inside-a-token check follows the first character): with the currency
# before the number, and without (a number that follows a currency is found twice, and the
# earlier hit wins the overlap)
_AMOUNT_TAIL = (
    r"(?:(?P<mag>[kKmMbB]|mm|mn|bn|mln)\b|\s?(?P<magw>million|billion|thousand)\b)?"
    r"(?:\s?(?P<cur2>USD|EUR|GBP|dollars|euros)\b)?"
)
AMOUNT_CURRENCY = (
    r"(?P<cur>U(?<![\w.-]U)S(?:\$|D)|E(?<![\w.-]E)UR|G(?<![\w.-]G)BP"
    r"|\$(?<![\w.-]\$)|€(?<![\w.-]€)|£(?<![\w.-]£))\s?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)" + _AMOUNT_TAIL
)
AMOUNT_NUMBER = r"(?P<num>\d(?<![\w.-]\d)(?:\d{0,2}(?:,\d{3})+(?:\.\d+)?|\d*(?:\.\d+)?))" + _AMOUNT_TAIL
# dates with month names are searched only just before a year (found with a fast pattern)
YEAR = re.compile(r"(?:1[89]|2[01])\d\d\b")
NAMED_DATE = re.compile(
    rf"(?P<mdate>\b(?i:{_MONTH})\.? \d{{1,2}}(?:st|nd|rd|th)?,? \d{{4}})"
    rf"|(?P<dmdate>\b\d{{1,2}}(?:st|nd|rd|th)? (?i:{_MONTH}) \d{{4}})"
)
NAMED_DATE_REACH = 24

# a phrase or cue starts a word: the previous character is not alphanumeric. As the first item of
# a pattern this look-behind fails in one step at the many positions inside words, where a phrase
# trie would otherwise be tried.
WORD_START = r"(?<![^\W_])"
# case-insensitive phrases, matched on the lower-cased text: statuses and hedges in one trie (the
# two lists share no phrase and no prefix; STATUS_OF tells which a match is)
PHRASES = rf"{WORD_START}(?:{phrase_pattern([*STATUS_OF, *HEDGES])})\b"
# attribution cues, matched on the lower-cased text; the named group holds the source
_SOURCE = r"[^,.;:\n\d$€£()]{2,40}"
ATTRIBUTION = (
    rf"{WORD_START}(?:according to (?:the )?(?P<a>{_SOURCE})"
    r"|per (?:the )?(?P<p>[\w&-]+(?: [\w&-]+){0,3})"
    rf"|as (?:reported|stated|confirmed|noted|advised|flagged) by (?:the )?(?P<b>{_SOURCE})"
    rf"|(?:source|reported by|confirmed by|verified by):\s*(?:the )?(?P<c>{_SOURCE})"
    r"|(?P<t>team|department|desk) (?:says|said|reports|reported|confirmed|confirms|notes|noted)\b)"
)


class Passes(NamedTuple):
    """The passes that run over a whole trace's text, compiled once per flag set."""

    isodate: re.Pattern[str]
    id_code: re.Pattern[str]
    id_ticket: re.Pattern[str]
    usdate: re.Pattern[str]
    amount_currency: re.Pattern[str]
    amount_number: re.Pattern[str]
    phrases: re.Pattern[str]
    attribution: re.Pattern[str]


def _passes(flags: int) -> Passes:
    return Passes(
        *(
            re.compile(p, flags)
            for p in (
                ISODATE,
                ID_CODE,
                ID_TICKET,
                USDATE,
                AMOUNT_CURRENCY,
                AMOUNT_NUMBER,
                PHRASES,
                ATTRIBUTION,
            )
        )
    )


_UNICODE_PASSES = _passes(0)
_ASCII_PASSES = _passes(re.ASCII)


def passes_for(text: str) -> Passes:
    """The passes for ``text``: on ASCII text, compiled with ``re.ASCII``, where ``\\d``, ``\\w``
    and ``\\b`` mean what they mean in Unicode mode but are table lookups instead of calls into
    the Unicode database (``str.isascii`` is a flag check, free)."""
    return _ASCII_PASSES if text.isascii() else _UNICODE_PASSES


TEAM_WORDS = ("team", "department", "desk", "office")

WORD = re.compile(r"[A-Za-z][A-Za-z-]*")
# a negator just before a status, across up to two auxiliaries: "not approved", "has not been
# submitted", "nothing is signed off", "not yet been approved"
NEGATED = re.compile(
    r"(?:\bnot|n't|\bnever|\bno|\bnothing|\byet to be)\s+(?:(?:yet|been|be|is|are|was|were|has|have|had)\s+){0,2}$",
    re.IGNORECASE,
)

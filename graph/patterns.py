"""The regular expressions of value extraction, shaped for speed over large texts.

Each pattern starts with a literal or a character set wherever possible, so the regex engine
skips ahead in C instead of trying every alternative at every position; word boundaries that
would defeat that are checked after the first character (a look-behind) or in Python. Phrase
lists compile to tries. The passes run once over the whole trace text joined together.
"""

from __future__ import annotations

import re

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
ISODATE = re.compile(r"\d(?<!\w\d)\d{3}-\d{2}-\d{2}\b")
ID = re.compile(r"[A-Z](?<!\w[A-Z])[A-Z]+[A-Z0-9]*-\d[\w-]*|#\d{3,}\b")
USDATE = re.compile(r"\d(?<!\w\d)\d?/\d{1,2}/\d{4}\b")
AMOUNT = re.compile(
    r"(?<![\w.-])(?:(?P<cur>US\$|USD|EUR|GBP|[$€£])\s?)?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?:(?P<mag>[kKmMbB]|mm|mn|bn|mln)\b|\s?(?P<magw>million|billion|thousand)\b)?"
    r"(?:\s?(?P<cur2>USD|EUR|GBP|dollars|euros)\b)?"
)
# dates with month names are searched only just before a year (found with a fast pattern)
YEAR = re.compile(r"(?:1[89]|2[01])\d\d\b")
NAMED_DATE = re.compile(
    rf"(?P<mdate>\b(?i:{_MONTH})\.? \d{{1,2}}(?:st|nd|rd|th)?,? \d{{4}})"
    rf"|(?P<dmdate>\b\d{{1,2}}(?:st|nd|rd|th)? (?i:{_MONTH}) \d{{4}})"
)
NAMED_DATE_REACH = 24

# case-insensitive phrases, matched on the lower-cased text (boundary before checked in Python)
PHRASES = re.compile(
    rf"(?:(?P<status>{phrase_pattern(list(STATUS_OF))})|(?P<hedge>{phrase_pattern(list(HEDGES))}))\b"
)
# attribution cues, matched on the lower-cased text; the named group holds the source
_SOURCE = r"[^,.;:\n\d$€£()]{2,40}"
ATTRIBUTION = re.compile(
    rf"according to (?:the )?(?P<a>{_SOURCE})"
    r"|per (?:the )?(?P<p>[\w&-]+(?: [\w&-]+){0,3})"
    rf"|as (?:reported|stated|confirmed|noted|advised|flagged) by (?:the )?(?P<b>{_SOURCE})"
    rf"|(?:source|reported by|confirmed by|verified by):\s*(?:the )?(?P<c>{_SOURCE})"
    r"|(?P<t>team|department|desk) (?:says|said|reports|reported|confirmed|confirms|notes|noted)\b"
)
TEAM_WORDS = ("team", "department", "desk", "office")

WORD = re.compile(r"[A-Za-z][A-Za-z-]*")
NEGATED = re.compile(r"(?:\bnot|n't|\bnever|\bno|\byet to be)\s+(?:yet\s+)?$", re.IGNORECASE)

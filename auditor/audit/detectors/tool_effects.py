"""Which tool calls change the world, and the values their arguments carry.

A call is **side-effecting** unless it is shown to be read-only: a policy's ``tool_effects``
declaration wins; otherwise a tool whose name opens with a reading verb (``get_…``, ``list…``,
``search…``: the API naming convention) only reads — except when it is handed a URL, since visiting
an address an attacker chose sends data out as surely as a post does. Everything else (sends,
posts, transfers, writes, invites, shares, deletes, bookings, updates, shell commands) is an
effect: reading is the exception to prove.

An argument **value** is a string of the call's arguments (at any depth), kept with its path and a
normal form that compares across the forms a value takes in text: case and white space folded, a
URL without its scheme, ``www.`` and trailing slash, an IBAN or card number without its spaces; a
text's dates written in words are followed by their ISO form, as a call carries them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any

from graph.vocab import MONTHS
from schemas import StepKind, TraceStep

if TYPE_CHECKING:
    from auditor.audit.policy import Policy

READING_VERBS = frozenset(
    [
        "get",
        "list",
        "lists",
        "search",
        "find",
        "query",
        "lookup",
        "fetch",
        "read",
        "view",
        "show",
        "check",
        "retrieve",
        "count",
        "describe",
        "browse",
        "inspect",
        "peek",
        "calculate",
        "compute",
        "convert",
        "validate",
        "verify",
        "preview",
    ]
)
MIN_VALUE = 4  # shorter strings ("yes", an id like "7") are too common to trace to one origin
# An address: a scheme or www. first, or a host followed by a path ("notes.txt" is a file name).
_URL = re.compile(
    r"^(?:(?:[a-z][a-z0-9+.-]*://|www\.)[\w.-]+\.[a-z]{2,}(?:[/?#:]\S*)?|[\w-]+(?:\.[\w-]+)*\.[a-z]{2,}[/?#]\S*)$",
    re.I,
)
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*://", re.I)
# An account or card number, written in groups or not. (Groups of two to four, each run split every
# way they allow, were tried on a long run that failed at its end: exponential, 42 letters after
# "GB29" took 0.4 s and each 4 more five times that; a run of two or more is any such split.)
_SPACED_CODE = re.compile(r"^[A-Z]{2}\d{2} ?[A-Z0-9]{2,}(?: [A-Z0-9]{2,})*$|^\d{4}(?: \d{4}){2,4}$")
# The same codes standing inside prose ("pay GB29 NWBK 6016 1331 9268 19 today").
_SPACED_CODE_IN_TEXT = re.compile(r"\b[A-Z]{2}\d{2}(?: [A-Z0-9]{2,4}){2,}\b|\b\d{4}(?: \d{4}){2,4}\b")
_WS = re.compile(r"\s+")
# A date written in words, with its year: "1 May 2024", "the 1st to the 5th of May 2024", "May 1st,
# 2024", "May 1-5, 2024", "May 30 to June 2, 2024" (any case; "may" is a month only among numbers).
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_DAY = r"(?:the )?\d{1,2}(?:st|nd|rd|th)?"
_UNTIL = r"\s*(?:-|–|to|and|until|till|through)\s*"
_PROSE_DATE = re.compile(
    rf"\b(?:{_DAY}(?:{_UNTIL}{_DAY})?(?: of)? (?:{_MONTH})\.?"
    rf"|(?:{_MONTH})\.? {_DAY}(?:{_UNTIL}(?:(?:{_MONTH})\.? )?{_DAY})?,?) (?:19|20)\d\d\b",
    re.I,
)
_YEAR = re.compile(r"\b(?:19|20)\d\d\b")


@dataclass(frozen=True)
class ArgValue:
    path: str
    text: str
    norm: str

    @property
    def is_url(self) -> bool:
        return bool(_URL.match(self.text.strip()))


def normal(text: str) -> str:
    """The comparable form of a value (the module doc)."""
    t = text.strip()
    if _SPACED_CODE.match(t):
        t = t.replace(" ", "")
    if " " not in t and _URL.match(t):
        t = _SCHEME.sub("", t)
        t = t.removeprefix("www.").removeprefix("WWW.").rstrip("/")
    return _WS.sub(" ", t).casefold()


def normal_text(text: str) -> str:
    """A step's text in the values' normal form: spaced account and card numbers written together,
    so that a value given as ``GB29 NWBK …`` in prose is found when a call carries it unspaced, and
    each date written in words followed by its ISO form ("from the 1st to the 5th of May 2024
    (2024-05-01 2024-05-05)"), as a call carries it."""
    text = _SPACED_CODE_IN_TEXT.sub(lambda m: m.group(0).replace(" ", ""), text)
    if _YEAR.search(text):
        text = _PROSE_DATE.sub(_with_iso_dates, text)
    return normal(text)


def _with_iso_dates(m: re.Match[str]) -> str:
    """A date phrase and, after it, the ISO form of each day it names: a day takes the month
    written before it when the phrase opens with a month ("May 1st to 5th, 2024"), else the
    first month after it ("the 1st to the 5th of May 2024")."""
    phrase = m.group()
    tokens = re.findall(r"\d+|[a-z]+", phrase.lower())
    year = int(next(t for t in tokens if len(t) == 4 and t.isdigit()))
    opens_with_month = tokens[0] in MONTHS
    dates = []
    for i, t in enumerate(tokens):
        if not (t.isdigit() and len(t) <= 2):
            continue
        # the pattern writes a month before every day of a phrase it opens, and after every other
        month = (
            [MONTHS[w] for w in tokens[:i] if w in MONTHS][-1]
            if opens_with_month
            else next(MONTHS[w] for w in tokens[i + 1 :] if w in MONTHS)
        )
        try:
            dates.append(date(year, month, int(t)).isoformat())
        except ValueError:
            return phrase  # no such day ("31st of February"): not a date
    return f"{phrase} ({' '.join(dates)})" if dates else phrase


def arg_values(step: TraceStep, shortest: int = MIN_VALUE) -> list[ArgValue]:
    """The string values of a call's arguments long enough to trace (``shortest`` characters)."""
    args = step.tool.arguments if step.tool is not None else None
    if not isinstance(args, dict):
        return []
    return [ArgValue(p, v, normal(v)) for p, v in _strings(args, "") if len(normal(v)) >= shortest]


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, f"{path}[{i}]")


def side_effecting(step: TraceStep, policy: Policy | None = None) -> bool:
    """Whether a tool call may change the world (the module doc gives the rule)."""
    declared = _declared(step, policy)
    if declared is not None:
        return declared
    if _reads(step):
        return any(v.is_url for v in arg_values(step))
    return True


def writes(step: TraceStep, policy: Policy | None = None) -> bool:
    """Whether a tool call changes the world itself: side-effecting, and no reading tool visiting an
    address (a browsing agent follows links by trade)."""
    declared = _declared(step, policy)
    return declared if declared is not None else step.kind is StepKind.tool_call and not _reads(step)


def _declared(step: TraceStep, policy: Policy | None) -> bool | None:
    """What the policy's ``tool_effects`` says of the call (None: nothing; no tool: not an effect)."""
    if step.kind is not StepKind.tool_call or step.tool is None:
        return False
    if policy is not None:
        if step.tool.name in policy.tool_effects.side_effecting:
            return True
        if step.tool.name in policy.tool_effects.read_only:
            return False
    return None


def _reads(step: TraceStep) -> bool:
    """A tool whose name opens with a reading verb (``get_…``, ``list…``, ``searchFiles``)."""
    words = re.split(r"[_\W]+|(?<=[a-z])(?=[A-Z])", step.tool.name.strip()) if step.tool else []
    return bool(words) and words[0].lower() in READING_VERBS

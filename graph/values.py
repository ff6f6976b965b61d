"""Extract values and their qualifiers from step text: amounts, ids, e-mails, dates, statuses.

A mention also carries what qualified it *on its line*: hedges ("tentatively"), attributions
("according to the finance team") and the status stated beside it. Provenance compares these
between the step that had a value and the step that carried it on.

Amounts are normalised to numbers with a precision (``quantum``): ``$2,437,910`` is 2437910 ± 5,
``2.44M`` is 2440000 ± 5000, ``USD 2.4 million`` 2400000 ± 50000; two amounts are the same value
when each lies within the other's rounding.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, replace

from graph.vocab import (
    ATTRIBUTION_LEADS,
    ATTRIBUTION_PATTERNS,
    CURRENCY,
    HEDGES,
    LABEL_STOPWORDS,
    MAGNITUDE,
    MONTHS,
    NEGATED_RANK,
    NEGATIONS,
    STATUS_RANK,
    STATUS_SYNONYMS,
)

VALUE_KINDS = ("amount", "id", "email", "date", "status")


def _alternation(phrases: list[str]) -> str:
    escaped = [re.escape(p).replace("'", "['’]") for p in sorted(phrases, key=len, reverse=True)]
    return "|".join(escaped)


_STATUS_OF = {p.lower(): canon for canon, phrases in STATUS_SYNONYMS.items() for p in phrases}
_MONTH_ALT = "|".join(sorted(MONTHS, key=len, reverse=True))
_VALUES = re.compile(
    r"(?P<email>\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b)"
    r"|(?P<uuid>\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b)"
    r"|(?P<isodate>\b\d{4}-\d{2}-\d{2}\b)"
    rf"|(?P<mdate>\b(?i:{_MONTH_ALT})\.? \d{{1,2}}(?:st|nd|rd|th)?,? \d{{4}}\b)"
    rf"|(?P<dmdate>\b\d{{1,2}}(?:st|nd|rd|th)? (?i:{_MONTH_ALT}) \d{{4}}\b)"
    r"|(?P<usdate>\b\d{1,2}/\d{1,2}/\d{4}\b)"
    r"|(?P<id>\b[A-Z]{2,}[A-Z0-9]*-\d[\w-]*|#\d{3,}\b)"
    r"|(?P<amount>(?<![\w.])(?:(?P<cur>US\$|USD|EUR|GBP|[$€£])\s?)?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?:(?P<mag>[kKmMbB]|mm|mn|bn|mln)\b|\s?(?P<magw>million|billion|thousand)\b)?"
    r"(?:\s?(?P<cur2>USD|EUR|GBP|dollars|euros)\b)?)"
    rf"|(?P<status>(?i:\b(?:{_alternation(list(_STATUS_OF))})\b))"
    rf"|(?P<hedge>(?i:\b(?:{_alternation(list(HEDGES))})\b))"
)
_ATTRIBUTION = re.compile("|".join(f"(?:{p})" for p in ATTRIBUTION_PATTERNS))
_WORD = re.compile(r"[A-Za-z][A-Za-z-]*")
_ATTR_TAIL = re.compile(r"\s+(?:says|said|reports|reported|confirmed|confirms|notes|noted)$")


@dataclass(frozen=True, slots=True)
class Mention:
    """One value as written in one step, with the qualifiers found on the same line."""

    kind: str
    surface: str
    norm: str
    start: int
    line: int
    value: float | None = None
    quantum: float | None = None
    currency: str | None = None
    label: str | None = None
    status: str | None = None
    anchor: str | None = None
    hedges: tuple[str, ...] = ()
    attributions: tuple[str, ...] = ()


def status_rank(status: str) -> int:
    return NEGATED_RANK if status.startswith("not_") else STATUS_RANK.get(status, 0)


def amounts_match(a: Mention, b: Mention) -> bool:
    """Same amount up to the coarser rounding of the two (and no conflicting currency)."""
    if a.value is None or b.value is None or a.quantum is None or b.quantum is None:
        return False
    if a.currency and b.currency and a.currency != b.currency:
        return False
    return abs(a.value - b.value) <= max(a.quantum, b.quantum) / 2 * (1 + 1e-9)


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.6g}"


def _amount(m: re.Match[str]) -> tuple[float, float, str | None] | None:
    num, cur = m["num"], m["cur"] or m["cur2"]
    mag_text = (m["mag"] or m["magw"] or "").lower()
    if not (cur or mag_text or "," in num):
        return None  # a bare number is too ambiguous to track
    digits = num.replace(",", "")
    mag = MAGNITUDE.get(mag_text, 1.0)
    if "." in digits:
        quantum = 10.0 ** -len(digits.split(".")[1])
    else:
        quantum = 10.0 ** (len(digits) - len(digits.rstrip("0"))) if digits.strip("0") else 1.0
    return float(digits) * mag, quantum * mag, CURRENCY.get(cur.lower()) if cur else None


def _date(m: re.Match[str]) -> str | None:
    text = m.group()
    if m["isodate"]:
        return text
    if m["usdate"]:
        mo, d, y = (int(x) for x in text.split("/"))
    else:
        words = re.findall(r"[A-Za-z]+|\d+", text)
        month = next(MONTHS[w.lower()] for w in words if w.lower() in MONTHS)
        nums = [int(w) for w in words if w.isdigit()]
        d, y, mo = min(nums), max(nums), month
    if not (1 <= mo <= 12 and 1 <= d <= 31):
        return None
    return f"{y:04d}-{mo:02d}-{d:02d}"


def _label(content: str, line_start: int, start: int) -> str | None:
    """What an amount is (the nearest content word before it on its line): 'total', 'budget'."""
    for word in reversed(_WORD.findall(content[max(line_start, start - 48) : start])):
        w = word.lower()
        if w not in LABEL_STOPWORDS:
            return w[:-1] if len(w) > 4 and w.endswith("s") and not w.endswith("ss") else w
    return None


def _attribution_source(text: str) -> str:
    low = " ".join(text.lower().split())
    for lead in ATTRIBUTION_LEADS:
        if low.startswith(lead):
            low = low[len(lead) :].strip()
            break
    low = _ATTR_TAIL.sub("", low).removeprefix("the ")
    return " ".join(low.split()[:4])


def extract_mentions(content: str) -> tuple[Mention, ...]:
    """Every value mention in ``content``, in text order, each with its line's qualifiers."""
    if not content:
        return ()
    newlines = [i for i, ch in enumerate(content) if ch == "\n"] if "\n" in content else []
    hedges: dict[int, list[str]] = {}
    statuses: dict[int, list[tuple[int, str]]] = {}
    raw: list[tuple[str, re.Match[str], int]] = []
    for m in _VALUES.finditer(content):
        group = m.lastgroup or ""
        line = bisect_right(newlines, m.start()) if newlines else 0
        if group == "hedge":
            hedges.setdefault(line, []).append(m.group().lower())
        else:
            raw.append((group, m, line))
            if group == "status":
                statuses.setdefault(line, []).append((m.start(), _status(content, m)))
    attributions: dict[int, list[str]] = {}
    for m in _ATTRIBUTION.finditer(content):
        line = bisect_right(newlines, m.start()) if newlines else 0
        attributions.setdefault(line, []).append(_attribution_source(m.group()))
    firsts: dict[int, dict[str, str]] = {}
    out: list[Mention] = []
    for group, m, line in raw:
        common = {
            "hedges": tuple(hedges.get(line, ())),
            "attributions": tuple(attributions.get(line, ())),
        }
        line_status = statuses.get(line)
        beside = line_status[0][1] if line_status else None
        mention = _mention(content, group, m, line, newlines, beside, common)
        if mention is None:
            continue
        if mention.kind in ("id", "amount"):
            firsts.setdefault(line, {}).setdefault(mention.kind, mention.norm)
        out.append(mention)
    return tuple(_anchor_statuses(out, firsts))


def _status(content: str, m: re.Match[str]) -> str:
    canon = _STATUS_OF[" ".join(m.group().lower().replace("’", "'").split())]
    before = content[max(0, m.start() - 12) : m.start()].lower()
    return f"not_{canon}" if any(neg in before for neg in NEGATIONS) else canon


def _mention(
    content: str,
    group: str,
    m: re.Match[str],
    line: int,
    newlines: list[int],
    beside: str | None,
    common: dict[str, tuple[str, ...]],
) -> Mention | None:
    text, start = m.group(), m.start()
    if group == "amount":
        parsed = _amount(m)
        if parsed is None:
            return None
        value, quantum, currency = parsed
        norm = f"{currency} {_fmt(value)}" if currency else _fmt(value)
        line_start = newlines[line - 1] + 1 if line else 0
        label = _label(content, line_start, start)
        return Mention("amount", text, norm, start, line, value, quantum, currency, label, beside, **common)
    if group in ("uuid", "id"):
        return Mention("id", text, text.upper(), start, line, status=beside, **common)
    if group == "email":
        return Mention("email", text, text.lower(), start, line, status=beside, **common)
    if group == "status":
        canon = _status(content, m)
        return Mention("status", text, canon, start, line, status=canon, **common)
    iso = _date(m)
    return None if iso is None else Mention("date", text, iso, start, line, status=beside, **common)


def _anchor_statuses(mentions: list[Mention], firsts: dict[int, dict[str, str]]) -> list[Mention]:
    """A status belongs to the first id on its line (else the first amount): its anchor."""
    out = []
    for mention in mentions:
        if mention.kind == "status":
            on_line = firsts.get(mention.line, {})
            anchor = on_line.get("id") or on_line.get("amount")
            if anchor is not None:
                mention = replace(mention, anchor=anchor)
        out.append(mention)
    return out

"""Extract values and their qualifiers from step text: amounts, ids, e-mails, dates, statuses.

A mention also carries what qualified it *on its line*: hedges ("tentatively"), attributions
("according to the finance team"), the status stated beside it, and its anchor (the first id on
the line: what the status or amount is about). Provenance compares these between the step that
had a value and the step that carried it on.

Amounts are normalised to numbers with a precision (``quantum``): ``$2,437,910`` is 2437910 ± 5,
``2.44M`` is 2440000 ± 5000, ``USD 2.4 million`` 2400000 ± 50000; two amounts are the same value
when each lies within the other's rounding. A bare number (no currency, magnitude or thousands
separator) is too ambiguous to track and is skipped.

``extract_all`` runs every pattern once over all of a trace's text joined together (the cost of
a regex call is paid per trace, not per step); ``extract_mentions`` is the one-text form.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right
from collections.abc import Callable, Sequence
from typing import NamedTuple, TypeVar

from graph import patterns as P
from graph.vocab import (
    CURRENCY,
    LABEL_STOPWORDS,
    MAGNITUDE,
    MONTHS,
    NEGATED_RANK,
    STATUS_RANK,
)

VALUE_KINDS = ("amount", "id", "email", "date", "status")
SEP = "\n\x00\n"
STRETCH = 2048  # steps scanned at once (see _Scanner)
_NEWLINE = re.compile("\n")
_UUID_CORE = re.compile(r"-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-")
_Hit = tuple[int, int, str, "re.Match[str]"]  # start, pass rank, group, match
T = TypeVar("T")


class Mention(NamedTuple):
    """One value as written in one step, with the qualifiers found on the same line (a named
    tuple: a trace holds hundreds of thousands of them, and tuples are built in C)."""

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
    num, cur2, mag_text, magw = m.group("num", "cur2", "mag", "magw")
    cur = (m.group("cur") if "cur" in m.re.groupindex else None) or cur2
    mag_text = (mag_text or magw or "").lower()
    if not (cur or mag_text or "," in num):
        return None
    digits = num.replace(",", "")
    mag = MAGNITUDE.get(mag_text, 1.0)
    if "." in digits:
        quantum = 10.0 ** -len(digits.split(".")[1])
    else:
        quantum = 10.0 ** (len(digits) - len(digits.rstrip("0"))) if digits.strip("0") else 1.0
    return float(digits) * mag, quantum * mag, CURRENCY.get(cur.lower()) if cur else None


def _date(m: re.Match[str]) -> str | None:
    text = m.group()
    if m.re.pattern == P.ISODATE:
        return text
    if m.re.pattern == P.USDATE:
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
    for word in reversed(P.WORD.findall(content[max(line_start, start - 48) : start])):
        w = word.lower()
        if w not in LABEL_STOPWORDS:
            return w[:-1] if len(w) > 4 and w.endswith("s") and not w.endswith("ss") else w
    return None


def _attributions(blob: str, lower: str, newlines: Sequence[int], passes: P.Passes) -> dict[int, list[str]]:
    """Attribution sources per (global) line: 'finance team' for 'according to the finance team'."""
    found: dict[int, list[str]] = {}
    for m in passes.attribution.finditer(lower):
        i = m.start()
        group = m.lastgroup or ""
        if group == "t":  # "the finance team said": the source is the words before the cue
            before = P.WORD.findall(blob[max(0, i - 30) : i])
            source = " ".join([*before[-1:], m["t"]]).lower()
        else:
            source = m[group]
            if group == "p" and not (blob[m.start("p")].isupper() or any(w in source for w in P.TEAM_WORDS)):
                continue  # "per hour", "per cent": not an attribution
        found.setdefault(bisect_right(newlines, i), []).append(" ".join(source.split()[:4]))
    return found


class _Scanner:
    """Every pass over the joined text, one stretch of whole steps at a time: a stretch's
    candidate matches (a match object each) are grouped into mentions before the next stretch is
    scanned, instead of every match of the trace at once. Each pass still reads the whole text
    around a stretch (look-behinds, the windows before a year or an ``@``), so the matches are
    those of one scan of the whole text."""

    def __init__(self, blob: str, lower: str, passes: P.Passes) -> None:
        self.blob, self.lower, self.passes = blob, lower, passes
        self.email_end = 0  # where the last e-mail ended: the e-mail pass runs on across stretches

    def hits(self, lo: int, hi: int) -> list[_Hit]:
        """The candidate matches that start in ``blob[lo:hi]``, each with its priority rank;
        ``hi`` is where a step starts (or the end), so no match runs past it (none crosses SEP)."""
        blob, lower, passes = self.blob, self.lower, self.passes
        hits: list[_Hit] = []
        end = self.email_end
        at = blob.find("@", max(lo, end), hi)
        while at != -1:
            m = P.EMAIL.search(blob, max(end, at - 64), at + 256)
            if m is not None and m.start() <= at < m.end():
                hits.append((m.start(), 0, "email", m))
                end = m.end()
            at = blob.find("@", max(at + 1, end), hi)
        self.email_end = end
        for core in _UUID_CORE.finditer(blob, lo, hi):
            m = P.UUID.match(blob, core.start() - 8)
            if m is not None:
                hits.append((m.start(), 1, "id", m))
        hits.extend((m.start(), 2, "date", m) for m in passes.isodate.finditer(blob, lo, hi))
        hits.extend((m.start(), 3, "id", m) for m in passes.id_code.finditer(blob, lo, hi))
        hits.extend((m.start(), 3, "id", m) for m in passes.id_ticket.finditer(blob, lo, hi))
        hits.extend((m.start(), 4, "date", m) for m in passes.usdate.finditer(blob, lo, hi))
        for year in P.YEAR.finditer(blob, lo, hi):
            m = P.NAMED_DATE.search(blob, max(0, year.start() - P.NAMED_DATE_REACH), year.end())
            if m is not None and m.end() == year.end():
                hits.append((m.start(), 5, "date", m))
        hits.extend((m.start(), 6, "amount", m) for m in passes.amount_currency.finditer(blob, lo, hi))
        hits.extend((m.start(), 6, "amount", m) for m in passes.amount_number.finditer(blob, lo, hi))
        status_of = P.STATUS_OF
        for m in passes.phrases.finditer(lower, lo, hi):
            group = "status" if m.group().replace("’", "'") in status_of else "hedge"
            hits.append((m.start(), 7, group, m))
        return hits


# One object per distinct text (and precision) among a trace's mentions: a value that recurs in a
# hundred thousand steps is held once, not once per mention. Only during one extraction.
_Keep = Callable[[T, T], T]

# What qualifies every mention on one line: hedges, attributions, status, anchor (a plain tuple:
# one is made per line with a mention, and a tuple costs a fraction of a frozen dataclass).
_Line = tuple[tuple[str, ...], tuple[str, ...], str | None, str | None]


def extract_all(contents: Sequence[str]) -> list[tuple[Mention, ...]]:
    """The mentions of each text, in text order, each with its line's qualifiers."""
    blob = SEP.join(contents)
    starts, offset = array("q"), 0
    for c in contents:
        starts.append(offset)
        offset += len(c) + len(SEP)
    lower = blob.lower()
    if len(lower) != len(blob):  # a rare letter whose lower case is longer: fold it away
        lower = "".join(ch if len(ch.lower()) != 1 else ch.lower() for ch in blob)
    newlines = array("q", (m.start() for m in _NEWLINE.finditer(blob)))
    passes = P.passes_for(blob)
    attributions = _attributions(blob, lower, newlines, passes)
    scanner = _Scanner(blob, lower, passes)
    keep: _Keep = {}.setdefault  # type: ignore[assignment]
    out: list[tuple[Mention, ...]] = [()] * len(contents)
    for first in range(0, len(contents), STRETCH):
        last = min(first + STRETCH, len(contents))
        per_step: dict[int, list[_Hit]] = {}
        for hit in scanner.hits(starts[first], starts[last] if last < len(contents) else len(blob)):
            per_step.setdefault(bisect_right(starts, hit[0]) - 1, []).append(hit)
        for pos, hits in per_step.items():
            base = starts[pos]
            multiline = blob.find("\n", base, base + len(contents[pos])) != -1
            out[pos] = _step_mentions(blob, base, hits, newlines, multiline, attributions, keep)
    return out


def extract_mentions(content: str) -> tuple[Mention, ...]:
    """The mentions of one text (see ``extract_all``)."""
    return extract_all([content])[0] if content else ()


def _step_mentions(
    blob: str,
    base: int,
    hits: list[_Hit],
    newlines: Sequence[int],
    multiline: bool,
    attributions: dict[int, list[str]],
    keep: _Keep,
) -> tuple[Mention, ...]:
    """One step's mentions. Lines are numbered within the step; a one-line step skips the
    per-hit line lookup."""
    hits.sort()  # by start, then pass rank (no two hits of one rank share a start)
    kept: list[tuple[_Hit, int, object]] = []
    hedges: dict[int, list[str]] = {}
    statuses: dict[int, str] = {}
    anchors: dict[int, str] = {}
    first_line = bisect_right(newlines, base)
    end = -1
    for hit in hits:
        start, _, group, m = hit
        if start < end:
            continue
        extra: object = None
        if group == "amount":
            extra = _amount(m)
            if extra is None:
                continue  # a bare number: skipped, and it hides nothing
        end = m.end()
        line = bisect_right(newlines, start) - first_line if multiline else 0
        if group == "hedge":
            hedges.setdefault(line, []).append(_kept(keep, m.group().lower()))
            continue
        if group == "status":
            extra = _kept(keep, _status(blob, base, m))
            statuses.setdefault(line, extra)  # type: ignore[arg-type]
        elif group == "id":
            extra = _kept(keep, m.group().upper())  # the id's norm, and the anchor of its line
            anchors.setdefault(line, extra)  # type: ignore[arg-type]
        kept.append((hit, line, extra))
    lines: dict[int, _Line] = {}
    found = []
    for (start, _, group, m), line, extra in kept:
        ctx = lines.get(line)
        if ctx is None:
            ctx = lines[line] = (
                tuple(hedges.get(line, ())),
                tuple(attributions.get(first_line + line, ())),
                statuses.get(line),
                anchors.get(line),
            )
        line_start = newlines[first_line + line - 1] + 1 if first_line + line else 0
        mention = _mention(blob, group, m, start - base, line, line_start, ctx, extra, keep)
        if mention is not None:
            found.append(mention)
    return tuple(found)


def _status(blob: str, base: int, m: re.Match[str]) -> str:
    canon = P.STATUS_OF[" ".join(m.group().lower().replace("’", "'").split())]
    lo = max(base, m.start() - 16)
    window = blob[lo : m.start()].lower()
    cue = "no" in window or "n't" in window or "never" in window or "yet" in window
    negated = cue and P.NEGATED.search(blob, lo, m.start()) is not None
    return f"not_{canon}" if negated else canon


_new = tuple.__new__  # builds a Mention in C, skipping NamedTuple's Python-level __new__


def _kept(keep: _Keep, text: str) -> str:
    return keep(text, text)


def _mention(
    blob: str,
    group: str,
    m: re.Match[str],
    start: int,
    line: int,
    line_start: int,
    ctx: _Line,
    extra: object,
    keep: _Keep,
) -> Mention | None:
    """Build one mention; ``extra`` is the parsed amount, the status or the id's norm computed
    earlier."""
    text = _kept(keep, m.group())
    h, a, st, anchor = ctx
    if group == "amount":
        value, quantum, cur = extra  # type: ignore[misc]
        norm = _kept(keep, f"{cur} {_fmt(value)}" if cur else _fmt(value))
        label = _kept(keep, lbl) if anchor and (lbl := _label(blob, line_start, m.start())) else None
        quantum = keep(quantum, quantum)  # a positive power of ten: equal ones are alike
        return _new(
            Mention, ("amount", text, norm, start, line, value, quantum, cur, label, st, anchor, h, a)
        )
    if group == "id":
        return _new(Mention, ("id", text, extra, start, line, None, None, None, None, st, None, h, a))
    if group == "email":
        norm = _kept(keep, text.lower())
        return _new(Mention, ("email", text, norm, start, line, None, None, None, None, st, None, h, a))
    if group == "status":
        own = str(extra)
        return _new(Mention, ("status", text, own, start, line, None, None, None, None, own, anchor, h, a))
    iso = _date(m)
    if iso is None:
        return None
    return _new(
        Mention, ("date", text, _kept(keep, iso), start, line, None, None, None, None, st, None, h, a)
    )

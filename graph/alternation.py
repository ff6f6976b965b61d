"""A regex alternation scanned in linear time, with the regex's own matches.

An alternative such as ``[\\w.+-]+@[\\w.-]+``, tried at every letter of a long word without an '@',
reads the rest of the word from each one before it fails: n starts by n characters. Every start in
that word shares one fate, but the regex engine cannot know it. Here each alternative also names the
stretches of a text where it matches at every position (a maximal run followed by an '@', found
once per run, from the run's start), so the scan jumps from one possible start to the next and tries
an alternative only where it matches. The spans are the regex's: leftmost first, the first
alternative listed winning at a shared start, each span the alternative's own match there, the scan
going on from its end. No alternative may match the empty string (the regex would then step past
each empty match, which this scan does not model).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Alternative:
    """One branch of the alternation and where it can start."""

    pattern: re.Pattern[str]  # the branch, as the regex tries it at a start
    # finds, left to right, the stretches where ``pattern`` matches at every position (each must cost
    # no more than its own length to find and to reject, the way a look-behind at a run's start does)
    stretches: re.Pattern[str]
    # where only some positions of a stretch start a match: those this one-character pattern matches
    within: re.Pattern[str] | None = None


class _Starts:
    """One alternative's next start at or after a position, read forward: each stretch found once."""

    def __init__(self, alternative: Alternative, text: str) -> None:
        self._text = text
        self._within = alternative.within
        self._stretches = alternative.stretches.finditer(text)
        self._stretch = next(self._stretches, None)
        self._last = -1  # the last answer: still the answer while the scan has not passed it

    def at_or_after(self, at: int) -> int | None:
        if self._last >= at:
            return self._last
        while self._stretch is not None:
            start, end = self._stretch.span()
            if end > at:
                first = self._first(max(start, at), end)
                if first is not None:
                    self._last = first
                    return first
            self._stretch = next(self._stretches, None)
        return None

    def _first(self, start: int, end: int) -> int | None:
        if self._within is None:
            return start
        found = self._within.search(self._text, start, end)
        return found.start() if found else None


class Alternation:
    """``first|second|…`` as one regex would scan it (``finditer``, ``findall``, ``split``, ``sub``)."""

    def __init__(self, *alternatives: Alternative) -> None:
        self.alternatives = alternatives

    def spans(self, text: str) -> Iterator[tuple[int, int]]:
        """The (start, end) of each match, left to right."""
        starts = [(_Starts(a, text), a.pattern) for a in self.alternatives]
        at = 0
        while True:
            chosen: tuple[int, re.Pattern[str]] | None = None
            for branch, pattern in starts:
                start = branch.at_or_after(at)
                if start is not None and (chosen is None or start < chosen[0]):
                    chosen = (start, pattern)
            if chosen is None:
                return
            match = chosen[1].match(text, chosen[0])
            assert match is not None, "a stretch must hold only starts of its alternative"
            yield match.span()
            at = match.end()

    def findall(self, text: str) -> list[str]:
        return [text[start:end] for start, end in self.spans(text)]

    def split(self, text: str) -> list[str]:
        """The text between matches, as ``re.split`` cuts it."""
        pieces, at = [], 0
        for start, end in self.spans(text):
            pieces.append(text[at:start])
            at = end
        return [*pieces, text[at:]]

    def sub(self, replacement: str, text: str) -> str:
        """Each match replaced by ``replacement``, taken literally."""
        return replacement.join(self.split(text))

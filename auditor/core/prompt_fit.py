"""Fitting a chat prompt to a token allowance: the longest messages are cut first.

A model call with a wall-time budget can only read (prefill) as many prompt tokens as the time left
allows; the rest must be left out before the call, not discovered after it. Cutting every message
to one common length (water-filling) keeps short messages whole, such as the instructions and the
latest question, and shortens the long ones, such as tool results, evenly.
"""

from __future__ import annotations


def common_cap(lengths: list[int], allowance: int) -> int | None:
    """The largest length ``c`` such that cutting every message to at most ``c`` tokens leaves at
    most ``allowance`` tokens in all; None when nothing needs cutting."""
    if sum(lengths) <= allowance:
        return None
    low, high = 0, max(lengths)
    while low < high:  # the largest c with sum(min(n, c)) <= allowance
        mid = (low + high + 1) // 2
        if sum(min(n, mid) for n in lengths) <= allowance:
            low = mid
        else:
            high = mid - 1
    return low

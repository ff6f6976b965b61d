"""Timing for growth-ratio tests: the best of a few runs in CPU time, with the garbage collector held.

A ratio of two sizes in one process says whether work grows linearly; the collector's passes do not
belong in it: their cost follows the whole heap (in a full suite, the loaded model and every test's
leftovers), so a bigger input that allocates more meets more of them and a linear detector measured
3.2x for twice the size in the suite, 2.0x alone. Before each run the young generations are
collected (what the previous run left while the collector was held is freed, so each run starts
from the same state), not the whole heap: a full collection of a suite's heap takes half a second,
and six of them per test made each of 50 growth tests take 4 s in the suite and 0.25 s alone.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable


def growth(small: Callable[[], object], large: Callable[[], object], rounds: int = 5) -> float:
    """How many times longer ``large`` takes than ``small``: the best time of each, the two timed in
    turn (small, large, small, …) so that other processes slowing the machine for a while slow both.
    Timed one after the other, a linear reader of failure reports read 3.6x for twice the input
    while a second test run shared the two cores (2.1x alone): the load fell on the larger's runs."""
    best_small = best_large = float("inf")
    for _ in range(rounds):
        best_small = min(best_small, best_seconds(small, runs=1))
        best_large = min(best_large, best_seconds(large, runs=1))
    return best_large / best_small


def best_seconds(work: Callable[[], object], runs: int = 5, least: float = 0.05) -> float:
    """The shortest of ``runs`` timings of ``work()`` or more, in CPU seconds of this process, each
    after a young collection, collector held. CPU time, not the wall clock: beside the suite's other
    processes on two cores, a linear scan's larger input, timed while they ran, read 4.5x and 5.5x
    for twice the input (2.0x alone) even as the best of many runs. Work of a few milliseconds is
    timed until ``least`` seconds were spent on it (at most 50 runs). Five runs, not three: beside
    the suite's other processes the best of three once read 3.5x for twice the input (a bulk call's
    contradiction check, 2.0x alone)."""
    best, spent, done = float("inf"), 0.0, 0
    while done < runs or (spent < least and done < 50):
        done += 1
        gc.collect(1)
        gc.disable()
        try:
            started = time.process_time()
            work()
            took = time.process_time() - started
            best, spent = min(best, took), spent + took
        finally:
            gc.enable()
    return best

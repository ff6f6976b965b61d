"""Group commit: the batches of concurrent callers written in one transaction by one writer.

A caller that must not answer before its data is durable (an OTLP export: its 200 says the spans
are stored) waits for a commit. One transaction per caller makes concurrent callers queue behind
each other's fsync, and on SQLite the queue is SQLite's busy handler, which sleeps 1, 2, 5, 10 …
ms between tries instead of waking when the lock is free. Here every caller queues its batch; the
first caller that finds the writer free takes every batch queued by then and writes them with one
call (one transaction, one fsync); the others wait for the commit that holds theirs, or take the
writer next. Nothing is acknowledged from memory: ``submit`` returns only once its batch is
committed, or raises the error that refused it. One caller's bad batch must not cost the others
their data (an OTLP exporter does not retry a 500): when a group of several fails, nothing of it
was committed, and each batch is written again on its own, so the error reaches only its callers.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

B = TypeVar("B")
R = TypeVar("R")


class _Pending(Generic[B, R]):
    __slots__ = ("batch", "done", "error", "result")

    def __init__(self, batch: B) -> None:
        self.batch = batch
        self.done = False  # set by the writer, read under the writer lock
        self.result: R | None = None
        self.error: BaseException | None = None


class GroupCommit(Generic[B, R]):
    """``write(batches)`` stores the batches in one transaction and returns one result per batch,
    in order; ``submit(batch)`` is called from any number of threads."""

    def __init__(self, write: Callable[[Sequence[B]], list[R]]) -> None:
        self._write = write
        self._queue: list[_Pending[B, R]] = []
        self._queue_lock = threading.Lock()
        self._writer = threading.Lock()

    def submit(self, batch: B) -> R:
        """Queue ``batch`` and return its result once the transaction holding it has committed."""
        mine: _Pending[B, R] = _Pending(batch)
        with self._queue_lock:
            self._queue.append(mine)
        with self._writer:
            # Still queued: no writer took it while this thread waited, so it leads the next group.
            if not mine.done:
                with self._queue_lock:
                    group, self._queue = self._queue, []
                self._commit(group)
        if mine.error is not None:
            raise mine.error
        return mine.result  # type: ignore[return-value]

    def _commit(self, group: list[_Pending[B, R]]) -> None:
        try:
            results = self._write([p.batch for p in group])
        except Exception as exc:
            if len(group) > 1:  # the transaction rolled back: find whose batch it was
                for p in group:
                    self._commit([p])
                return
            group[0].error, group[0].done = exc, True
            return
        except BaseException as exc:
            for p in group:
                p.error, p.done = exc, True
            return
        for p, result in zip(group, results, strict=True):
            p.result, p.done = result, True

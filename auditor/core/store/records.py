"""Stored rows back to events: a RecordedEvent built from trusted store data without pydantic
re-validating it, and the stored JSON text read back (the hot read and append paths)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from schemas.events import RecordedEvent

_FIELDS_SET = frozenset(RecordedEvent.model_fields)


def make_event(head: tuple, payload: Any, metadata: Any, prev: str, digest: str, at: str) -> RecordedEvent:
    """A RecordedEvent from a stored row's head (position … idempotency key) and its decoded
    payload and metadata."""
    ev = object.__new__(RecordedEvent)
    object.__setattr__(
        ev,
        "__dict__",
        {
            "global_position": head[0],
            "stream_id": head[1],
            "stream_version": head[2],
            "type": head[3],
            "schema_version": head[4],
            "payload": payload,
            "metadata": metadata,
            "idempotency_key": head[7],
            "prev_hash": prev,
            "hash": digest,
            "recorded_at": at,
        },
    )
    object.__setattr__(ev, "__pydantic_fields_set__", _FIELDS_SET)
    object.__setattr__(ev, "__pydantic_extra__", None)
    object.__setattr__(ev, "__pydantic_private__", None)
    return ev


_scan_json = json.JSONDecoder().scan_once  # the C scanner itself


def load_json(text: str) -> Any:
    """Stored JSON back to a value. The store wrote it compact, so json.loads' whitespace and
    trailing-data checks (half the cost of a small payload) have nothing to find."""
    return _scan_json(text, 0)[0]


def row_to_event(r: Sequence[Any]) -> RecordedEvent:
    """A full stored row (the recorder's COLUMNS, in order) as an event."""
    metadata = {} if r[6] == "{}" else load_json(r[6])
    return make_event(tuple(r), load_json(r[5]), metadata, r[8], r[9], r[10])

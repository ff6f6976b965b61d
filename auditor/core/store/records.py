"""Stored rows back to events: a RecordedEvent built from trusted store data without pydantic
re-validating it, and the stored JSON text read back (the hot read and append paths)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from schemas.events import RecordedEvent

_FIELDS_SET = frozenset(RecordedEvent.model_fields)
# A model's four slots set through their descriptors: a third cheaper than object.__setattr__,
# which looks each name up on the class first (~0.3 µs an event on the append path).
_new = object.__new__
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__


def make_event(head: tuple, payload: Any, metadata: Any, prev: str, digest: str, at: str) -> RecordedEvent:
    """A RecordedEvent from a stored row's head (position … idempotency key) and its decoded
    payload and metadata."""
    ev = _new(RecordedEvent)
    _set_dict(
        ev,
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
    _set_fields_set(ev, _FIELDS_SET)
    _set_extra(ev, None)
    _set_private(ev, None)
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

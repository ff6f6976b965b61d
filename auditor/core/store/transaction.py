"""A write transaction on the event store: the one contract every writer uses.

    with store.transaction() as tx:
        versions = tx.versions(streams)                  # read under the append lock
        tx.append(stream_id, new_events, expected_version)
        tx.append_encoded(encoded_events)                # many streams, already encoded

The append lock is taken when the transaction starts (SQLite ``BEGIN IMMEDIATE``; PostgreSQL
``LOCK TABLE … IN EXCLUSIVE MODE``), so what is read inside stays current until the commit, the
global order is gap-free and equal to commit order, and each event's hash chains to the one
before it. ``_chain`` is the one place that chain is computed; the recorder inserts the rows and
reads back that the table holds them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple

from auditor.core.errors import ConcurrencyError, StoreError
from auditor.core.store.hashing import GENESIS_HASH, compact_json, event_hash
from auditor.core.store.recorder import Recorder
from auditor.core.store.records import make_event, row_to_event
from schemas.events import EVENT_SCHEMA_VERSION, NewEvent, RecordedEvent


class EncodedEvent(NamedTuple):
    """An event in its stored form (payload and metadata as JSON text) with the stream version its
    writer assigned: a batch writer appends many streams in one transaction without building a
    NewEvent and re-encoding its payload per event."""

    stream_id: str
    stream_version: int
    type: str
    payload_json: str
    metadata_json: str
    idempotency_key: str | None
    schema_version: int = EVENT_SCHEMA_VERSION


class Reader:
    """Queries on the event table inside one transaction, in any database's terms."""

    def __init__(self, recorder: Recorder, cur: Any) -> None:
        self._recorder, self._cur = recorder, cur

    def execute(self, query: str, params: Sequence[Any] = ()) -> list[tuple]:
        """The rows of a query written with ``?`` placeholders."""
        self._recorder.execute(self._cur, self._recorder.sql(query), params)
        return self._cur.fetchall()

    def any_of(self, column: str, values: Sequence[Any]) -> tuple[str, tuple]:
        """``column IN (…)`` for ``execute`` and its parameters (at most 500 values)."""
        return self._recorder.any_of(column, values)

    def json_text(self, column: str, *path: str) -> str:
        """An expression for ``execute`` reading the text at ``path`` in the JSON of ``column``."""
        return self._recorder.json_text(column, *path)

    def versions(self, streams: Sequence[str]) -> dict[str, int]:
        """The current version of each of ``streams`` that exists."""
        return self._recorder.versions(self._cur, streams)


class Transaction(Reader):
    """Reads and appends inside one write transaction that holds the append lock."""

    def append(
        self,
        stream_id: str,
        new_events: Sequence[NewEvent],
        expected_version: int | None = None,
        *,
        look_up_keys: bool = True,
    ) -> list[RecordedEvent]:
        """Append events to one stream; returns their records in order.

        ``expected_version`` is the stream's version as the caller saw it (0: a new stream); None
        skips the check. Events whose idempotency key is stored already are not appended again:
        their original record stands in their place. ``look_up_keys=False`` skips that lookup for
        events the caller knows are new: a stored key then fails the transaction (unique index)."""
        keys = [e.idempotency_key for e in new_events if e.idempotency_key] if look_up_keys else []
        rows = self._recorder.by_keys(self._cur, keys) if keys else []
        existing = {r[7]: row_to_event(r) for r in rows}
        fresh = (
            [e for e in new_events if not (e.idempotency_key and e.idempotency_key in existing)]
            if existing
            else new_events
        )
        if not fresh:
            return [existing[e.idempotency_key] for e in new_events]  # type: ignore[index]
        self._cur.execute(self._recorder.heads, (stream_id,))
        version, position, prev = self._cur.fetchone()
        if expected_version is not None and version != expected_version:
            raise ConcurrencyError(stream_id, expected_version, version)
        encoded: list[tuple] = []  # EncodedEvent's fields, as a plain tuple (the hot path)
        kept: list[NewEvent] = []
        seen: set[str] = set()
        for e in fresh:
            key = e.idempotency_key
            if key:
                if key in seen:
                    continue  # the same key twice in one batch is one event
                seen.add(key)
            version += 1
            metadata_json = compact_json(e.metadata) if e.metadata else "{}"
            payload_json = compact_json(e.payload)
            encoded.append((stream_id, version, e.type, payload_json, metadata_json, key, e.schema_version))
            kept.append(e)
        chained = self._chain(encoded, (position, prev or GENESIS_HASH))
        out = [
            make_event(r, e.payload, e.metadata, r[8], r[9], r[10])
            for r, e in zip(chained, kept, strict=True)
        ]
        if len(out) == len(new_events):  # every event new and appended once: records in order
            return out
        by_key = {r.idempotency_key: r for r in out if r.idempotency_key}
        by_key.update(existing)
        fresh_iter = iter(out)
        return [
            by_key[e.idempotency_key] if e.idempotency_key in by_key else next(fresh_iter) for e in new_events
        ]

    def append_encoded(self, encoded: Sequence[EncodedEvent]) -> None:
        """Append encoded events of many streams, in one statement. Their stream versions were
        assigned from versions read in this transaction; a stale one, or a stored idempotency key,
        trips a unique index and fails the transaction."""
        if not encoded:
            return
        self._cur.execute(self._recorder.last)
        last = self._cur.fetchone()
        self._chain(encoded, (last[0], last[1]) if last else (0, GENESIS_HASH))

    def _chain(self, encoded: Iterable[tuple], head: tuple[int, str]) -> list[tuple]:
        """Chain the events after ``head`` (the last stored position and hash; ``encoded``: the
        fields of EncodedEvents, in their order), insert them and
        check that the table holds what was written: a trigger that skips an insert (SQLite
        ``RAISE(IGNORE)``, a PostgreSQL trigger returning NULL) or a rule that replaces it raises
        no error of its own, and an append reported done for an event not stored would let
        ``tokens revoke`` exit 0 while the token stays active. Returns the stored rows."""
        position, prev = head
        recorded_at = datetime.now(UTC).isoformat(timespec="microseconds")
        rows: list[tuple] = []
        for stream_id, version, kind, payload_json, metadata_json, key, schema_version in encoded:
            position += 1
            # the fields spelt out twice, not packed once and unpacked: 0.3 µs an event cheaper
            # fmt: off
            digest = event_hash(
                prev, position, stream_id, version, kind, schema_version, payload_json, metadata_json, key,
                recorded_at,
            )
            rows.append((
                position, stream_id, version, kind, schema_version, payload_json, metadata_json, key, prev,
                digest, recorded_at,
            ))
            # fmt: on
            prev = digest
        stored = self._recorder.insert_rows(self._cur, rows)
        if stored != (len(rows), position, prev):
            raise StoreError(
                f"the database did not store the events of this append: {len(rows)} written from "
                f"position {rows[0][0]}, {stored[0]} found there; nothing was appended",
                hint="a trigger or rule on the events table drops or changes inserts: run "
                "'auditor store verify' (see docs/store.md)",
            )
        return rows

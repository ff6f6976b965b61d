"""Walk the hash chain and name the first broken link: an edited, removed or reordered event."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select

from auditor.store.eventstore import EventStore
from auditor.store.hashing import GENESIS_HASH, event_hash
from auditor.store.tables import events

_BATCH = 5000


@dataclass(frozen=True)
class ChainReport:
    checked: int
    ok: bool
    broken_position: int | None = None
    reason: str | None = None


def verify_chain(store: EventStore) -> ChainReport:
    prev, expected_pos, checked = GENESIS_HASH, 1, 0
    while True:
        with store.engine.connect() as conn:
            rows = (
                conn.execute(
                    select(events)
                    .where(events.c.global_position >= expected_pos)
                    .order_by(events.c.global_position)
                    .limit(_BATCH)
                )
                .mappings()
                .all()
            )
        for r in rows:
            pos = r["global_position"]
            if pos != expected_pos:
                return ChainReport(checked, False, expected_pos, f"event {expected_pos} is missing")
            if r["prev_hash"] != prev:
                return ChainReport(checked, False, pos, "prev_hash does not match the previous event's hash")
            digest = event_hash(
                prev,
                global_position=pos,
                stream_id=r["stream_id"],
                stream_version=r["stream_version"],
                type=r["type"],
                schema_version=r["schema_version"],
                payload_json=r["payload"],
                metadata_json=r["metadata"],
                idempotency_key=r["idempotency_key"],
                recorded_at=r["recorded_at"],
            )
            if digest != r["hash"]:
                return ChainReport(checked, False, pos, "content does not match its hash (edited event)")
            prev, expected_pos, checked = r["hash"], pos + 1, checked + 1
        if len(rows) < _BATCH:
            return ChainReport(checked, True)

"""Verify the store: walk the hash chain, hold it against the signed checkpoints, check the guards.

The first problem found is reported, in this order: a broken link (an edited, removed or
reordered event, or a column holding a value of another type than the store writes) or an
anchored position whose hash differs from its checkpoint (a rewritten chain), in position order;
then a chain shorter than a checkpoint (events cut off the end); then an append-only guard that is
missing or altered, a trigger or rule on the events table that is no guard, and a schema revision
record that was removed. What each check proves is in docs/store.md.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select

from auditor.core.store.eventstore import EventStore
from auditor.core.store.guards import GuardProblem, check_guards, on_events
from auditor.core.store.hashing import GENESIS_HASH, event_hash
from auditor.core.store.tables import events

if TYPE_CHECKING:
    from auditor.core.store.anchors import Checkpoint

_BATCH = 5000


@dataclass(frozen=True)
class ChainReport:
    checked: int
    ok: bool
    broken_position: int | None = None
    reason: str | None = None
    head_position: int = 0
    head_hash: str = GENESIS_HASH
    anchor: Checkpoint | None = None  # the latest checkpoint held against the chain
    checkpoints: int = 0
    guard_problems: tuple[GuardProblem, ...] = ()
    schema_damage: str | None = None  # the store's version table holds no single revision
    on_events: tuple[str, ...] = ()  # every trigger and rule on the events table, when all are guards

    @property
    def chain_ok(self) -> bool:
        """The events are intact and anchored (the guards and the schema's revision record are
        checked last, so only they can fail)."""
        return self.ok or bool(self.guard_problems) or self.schema_damage is not None

    def to_json(self) -> dict[str, Any]:
        """The verdict for machines; ``checkpoint`` only where checkpoints were checked."""
        out: dict[str, Any] = {
            "checked": self.checked,
            "ok": self.ok,
            "broken_position": self.broken_position,
            "reason": self.reason,
        }
        if self.anchor is not None:
            out["checkpoint"] = {
                "position": self.anchor.position,
                "hash": self.anchor.hash,
                "created_at": self.anchor.created_at,
                "checked": self.checkpoints,
            }
        return out


def verify_chain(
    store: EventStore, checkpoints: Sequence[Checkpoint] = (), since: Checkpoint | None = None
) -> ChainReport:
    """Walk the chain from its start, or from ``since`` (a checkpoint already verified: only the
    events after it are walked, and they must chain onto it), comparing every anchored position
    with its checkpoints."""
    anchors: dict[int, list[Checkpoint]] = defaultdict(list)
    for cp in checkpoints:
        anchors[cp.position].append(cp)
    latest = max(checkpoints, key=lambda c: c.position, default=None)

    def report(
        checked: int,
        position: int | None = None,
        reason: str | None = None,
        guards: Sequence[GuardProblem] = (),
        damage: str | None = None,
    ) -> ChainReport:
        ok = reason is None
        return ChainReport(
            checked,
            ok,
            position,
            reason,
            head_position,
            prev,
            latest,
            len(checkpoints),
            tuple(guards),
            damage,
        )

    prev, head_position = GENESIS_HASH, 0
    with store.engine.connect() as conn:
        if since is None:
            first = conn.execute(select(func.min(events.c.global_position))).scalar()
            if first is not None and first < 1:
                return report(0, first, f"event {first} lies before the start of the chain")
        else:
            stored = conn.execute(
                select(events.c.hash).where(events.c.global_position == since.position)
            ).scalar()
            if stored is None:
                return report(0, since.position, f"event {since.position} is missing{_anchored(since)}")
            if stored != since.hash:
                return report(0, since.position, _rewritten(since))
            prev, head_position = since.hash, since.position
    expected_pos, checked = head_position + 1, 0
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
                return report(checked, expected_pos, f"event {expected_pos} is missing")
            if mistyped := _mistyped(r):
                return report(checked, pos, mistyped)
            if r["prev_hash"] != prev:
                return report(checked, pos, "prev_hash does not match the previous event's hash")
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
                return report(checked, pos, "content does not match its hash (edited event)")
            for cp in anchors.get(pos, ()):
                if cp.hash != digest:
                    return report(checked, pos, _rewritten(cp))
            prev, head_position, expected_pos, checked = digest, pos, pos + 1, checked + 1
        if len(rows) < _BATCH:
            break
    if latest is not None and latest.position > head_position:
        return report(
            checked,
            head_position + 1,
            f"the chain ends at event {head_position} but the checkpoint signed {latest.created_at} "
            f"anchors {latest.position} events: events were removed from the end",
        )
    with store.engine.connect() as conn:
        problems = check_guards(conn, store.schema.applied)
        found = tuple(on_events(conn))
    reasons = []
    if lost := [str(p) for p in problems if not p.unknown]:
        reasons.append("append-only guard lost: " + "; ".join(lost))
    reasons += [str(p) for p in problems if p.unknown]
    damage = store.schema.damage
    if damage:
        reasons.append(f"the store's schema revision was removed or changed: {damage}")
    if reasons:
        return report(checked, None, "; ".join(reasons), problems, damage)
    return replace(report(checked), on_events=found)


_INTEGER = ("global_position", "stream_version", "schema_version")
_TEXT = ("stream_id", "type", "payload", "metadata", "prev_hash", "hash", "recorded_at")


def _mistyped(row: Mapping[str, Any]) -> str | None:
    """The first column holding a value of another type than the store writes (a BLOB where text
    belongs: SQLite keeps any type in any column, PostgreSQL after an ALTER COLUMN … TYPE)."""
    for name in (*_INTEGER, *_TEXT, "idempotency_key"):
        value = row[name]
        wanted = int if name in _INTEGER else str
        if type(value) is wanted or (value is None and name == "idempotency_key"):
            continue
        held = "bytes (a BLOB)" if isinstance(value, bytes | bytearray | memoryview) else type(value).__name__
        kind = "an integer" if wanted is int else "text"
        return f"its {name} holds {held}, not {kind}: the event was changed outside the store"
    return None


def _anchored(cp: Checkpoint) -> str:
    return f" (anchored by the checkpoint signed {cp.created_at})"


def _rewritten(cp: Checkpoint) -> str:
    return (
        f"event {cp.position}'s hash differs from the checkpoint signed {cp.created_at}: "
        "the chain was rewritten at or before it"
    )

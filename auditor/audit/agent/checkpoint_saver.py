"""A LangGraph checkpoint saver backed by the event store, so an interrupted audit resumes.

Checkpoints and pending writes are events in ``agent-checkpoints-{thread_id}``: appended, never
updated. The latest checkpoint of a thread is the last ``CheckpointSaved`` event; its pending
writes are the ``CheckpointWrites`` events that name it.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator, Sequence
from typing import Any

from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
)

from auditor.core.store import EventStore
from schemas import NewEvent


def checkpoint_stream(thread_id: str) -> str:
    return f"agent-checkpoints-{thread_id}"


class EventStoreSaver(BaseCheckpointSaver):
    def __init__(self, store: EventStore) -> None:
        super().__init__()
        self.store = store

    def _dump(self, value: Any) -> list[str]:
        kind, data = self.serde.dumps_typed(value)
        return [kind, base64.b64encode(data).decode()]

    def _load(self, typed: list[str]) -> Any:
        return self.serde.loads_typed((typed[0], base64.b64decode(typed[1])))

    def put(
        self,
        config: dict,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> dict:
        conf = config["configurable"]
        thread, ns = conf["thread_id"], conf.get("checkpoint_ns", "")
        payload = {
            "thread_id": thread,
            "ns": ns,
            "checkpoint_id": checkpoint["id"],
            "parent_id": conf.get("checkpoint_id"),
            "checkpoint": self._dump(checkpoint),
            "metadata": self._dump(get_checkpoint_metadata(config, metadata)),
        }
        key = f"ckpt:{thread}:{ns}:{checkpoint['id']}"
        self.store.append(
            checkpoint_stream(thread),
            [NewEvent(type="CheckpointSaved", payload=payload, idempotency_key=key)],
        )
        return {"configurable": {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": checkpoint["id"]}}

    def put_writes(
        self, config: dict, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        conf = config["configurable"]
        thread, ns, cid = conf["thread_id"], conf.get("checkpoint_ns", ""), conf["checkpoint_id"]
        events = [
            NewEvent(
                type="CheckpointWrites",
                payload={
                    "thread_id": thread,
                    "ns": ns,
                    "checkpoint_id": cid,
                    "task_id": task_id,
                    "channel": c,
                    "value": self._dump(v),
                },
                idempotency_key=f"ckw:{thread}:{ns}:{cid}:{task_id}:{WRITES_IDX_MAP.get(c, idx)}",
            )
            for idx, (c, v) in enumerate(writes)
        ]
        if events:
            self.store.append(checkpoint_stream(thread), events)

    def _tuples(self, thread: str, ns: str) -> list[CheckpointTuple]:
        saved, writes = [], {}
        for ev in self.store.read_stream(checkpoint_stream(thread)):
            p = ev.payload
            if p["ns"] != ns:
                continue
            if ev.type == "CheckpointSaved":
                saved.append(p)
            elif ev.type == "CheckpointWrites":
                writes.setdefault(p["checkpoint_id"], []).append(
                    (p["task_id"], p["channel"], self._load(p["value"]))
                )
        out = []
        for p in saved:
            conf = {
                "configurable": {
                    "thread_id": thread,
                    "checkpoint_ns": ns,
                    "checkpoint_id": p["checkpoint_id"],
                }
            }
            parent = (
                {"configurable": {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": p["parent_id"]}}
                if p["parent_id"]
                else None
            )
            out.append(
                CheckpointTuple(
                    conf,
                    self._load(p["checkpoint"]),
                    self._load(p["metadata"]),
                    parent,
                    writes.get(p["checkpoint_id"], []),
                )
            )
        return out

    def get_tuple(self, config: dict) -> CheckpointTuple | None:
        conf = config["configurable"]
        tuples = self._tuples(conf["thread_id"], conf.get("checkpoint_ns", ""))
        wanted = get_checkpoint_id(config)
        if wanted:
            return next((t for t in tuples if t.config["configurable"]["checkpoint_id"] == wanted), None)
        return max(tuples, key=lambda t: t.config["configurable"]["checkpoint_id"]) if tuples else None

    def list(
        self,
        config: dict | None,
        *,
        filter: dict | None = None,
        before: dict | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        if config is None:
            return iter(())
        conf = config["configurable"]
        tuples = sorted(
            self._tuples(conf["thread_id"], conf.get("checkpoint_ns", "")),
            key=lambda t: t.config["configurable"]["checkpoint_id"],
            reverse=True,
        )
        if before is not None:
            cut = get_checkpoint_id(before)
            tuples = [t for t in tuples if t.config["configurable"]["checkpoint_id"] < cut]
        if filter:
            tuples = [t for t in tuples if all(t.metadata.get(k) == v for k, v in filter.items())]
        return iter(tuples[:limit] if limit else tuples)

"""Consumer-group lag per partition: how far each group is behind the end of its topic."""

from __future__ import annotations

from dataclasses import dataclass

from auditor.core.errors import InputError
from ingest.stream_loop import kafka_client


@dataclass(frozen=True)
class PartitionLag:
    topic: str
    partition: int
    committed: int | None  # None: the group never committed on this partition
    end: int

    @property
    def lag(self) -> int:
        return self.end - (self.committed or 0)


def partition_lag(bootstrap: str, group: str, topic: str) -> list[PartitionLag]:
    """Committed offset, log end offset and lag for every partition of ``topic`` in ``group``."""
    from kafka import KafkaConsumer
    from kafka.admin import KafkaAdminClient
    from kafka.structs import TopicPartition

    admin = kafka_client(KafkaAdminClient, bootstrap=bootstrap, request_timeout_ms=10000)
    probe = kafka_client(KafkaConsumer, bootstrap=bootstrap, group_id=None, enable_auto_commit=False)
    try:
        partitions = probe.partitions_for_topic(topic)
        if not partitions:
            raise InputError(f"topic '{topic}' does not exist on {bootstrap}", field="--topic")
        tps = [TopicPartition(topic, p) for p in sorted(partitions)]
        ends = probe.end_offsets(tps)
        committed = admin.list_group_offsets({group: tps}).get(group, {})
    finally:
        probe.close()
        admin.close()
    out = []
    for tp in tps:
        c = committed.get(tp)
        offset = c.offset if c is not None and c.offset >= 0 else None
        out.append(PartitionLag(topic, tp.partition, offset, ends[tp]))
    return out

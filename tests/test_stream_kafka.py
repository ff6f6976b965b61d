"""The ingestion consumer against a real broker and real PostgreSQL: dead letters, crash windows,
kill -9, broker restart. Each test uses its own topics and its own PostgreSQL schema."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from auditor.core.store import open_store
from auditor.core.store.traces import load_trace
from ingest import open_traces as import_file
from ingest.stream_lag import partition_lag
from tests.stream_support import (
    count_type,
    kafka_bootstrap,
    new_topics,
    publish_traces,
    read_topic,
    running,
    stored_steps,
    wait_until,
)

pytestmark = [pytest.mark.kafka, pytest.mark.postgres]
REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "ingest"


@pytest.fixture
def bootstrap() -> str:
    return kafka_bootstrap()


@pytest.fixture
def pg_store(pg_schema_url: str) -> Iterator:
    s = open_store(pg_schema_url)
    yield s
    s.close()


def _config(bootstrap: str, topics: dict[str, str], **kw: object):
    from ingest.stream import ConsumerConfig

    return ConsumerConfig(
        bootstrap=bootstrap,
        topic=topics["steps"],
        group=f"g-{topics['steps']}",
        dead_letter_topic=topics["dlq"],
        closed_topic=topics["closed"],
        poll_ms=100,
        session_timeout_ms=6000,
        **kw,  # type: ignore[arg-type]
    )


def _expect_exactly_once(store, traces: dict[str, int], closed: int | None = None) -> None:
    for tid, n in traces.items():
        assert stored_steps(store, tid) == list(range(n)), f"trace {tid} not stored exactly once in order"
    assert count_type(store, "StepRecorded") == sum(traces.values())
    assert count_type(store, "TraceStarted") == len(traces)
    assert count_type(store, "TraceClosed") == (len(traces) if closed is None else closed)


def test_bad_records_are_dead_lettered_and_nothing_else_is_lost(bootstrap: str, pg_store) -> None:
    from kafka import KafkaProducer

    from ingest.stream import StreamConsumer

    topics = new_topics(bootstrap, 1, "steps", "dlq", "closed")
    publish_traces(bootstrap, topics["steps"], {"good-1": 3})
    bad = [
        (b"t-bad", b'{"step_id": "s0", "index": 0, "actor": "a"', "malformed", "malformed JSON"),
        (b"t-bad", b"\xff\xfe not utf-8", "malformed", "not UTF-8"),
        (None, b'{"step_id": "s0", "index": 0, "actor": "a"}', "malformed", "no key"),
        (b"t-bad", b"[1, 2]", "malformed", "expected a JSON object"),
        (
            b"t-bad",
            json.dumps({"step_id": "s0", "index": -1, "actor": "a"}).encode(),
            "wrong_schema",
            "'index'",
        ),
        (b"t-bad", json.dumps({"record": "verdict"}).encode(), "wrong_schema", "unknown record kind"),
        (
            b"t-bad",
            json.dumps({"record": "header", "trace_id": "other"}).encode(),
            "wrong_schema",
            "key says",
        ),
        (b"t-big", b'{"content": "' + b"x" * 300_000 + b'"}', "oversized", "limit is 200000"),
    ]
    producer = KafkaProducer(bootstrap_servers=bootstrap, max_request_size=1 << 20)
    for key, value, _, _ in bad:
        producer.send(topics["steps"], key=key, value=value)
    producer.flush()
    producer.close()
    publish_traces(bootstrap, topics["steps"], {"good-2": 2})

    consumer = StreamConsumer(pg_store, _config(bootstrap, topics, max_record_bytes=200_000))
    with running(consumer):
        wait_until(lambda: count_type(pg_store, "TraceClosed") == 2, 30, "both good traces closed")

    _expect_exactly_once(pg_store, {"good-1": 3, "good-2": 2})
    letters = read_topic(bootstrap, topics["dlq"], len(bad))
    assert len(letters) == len(bad)
    for letter, (key, value, kind, reason) in zip(letters, bad, strict=True):
        headers = {k: v.decode() for k, v in letter.headers}
        assert headers["dlq.kind"] == kind
        assert reason in headers["dlq.reason"]
        assert headers["dlq.source"].startswith(f"{topics['steps']}/0/")
        assert letter.key == key
        assert letter.value == value[:200_000]
    assert consumer.metrics.total("dead_letters_total") == len(bad)
    notices = read_topic(bootstrap, topics["closed"], 2)
    assert sorted(json.loads(n.value)["trace_id"] for n in notices) == ["good-1", "good-2"]
    assert {json.loads(n.value)["step_count"] for n in notices} == {3, 2}


def test_consumer_with_redact_stores_placeholders_never_the_values(bootstrap: str, pg_store) -> None:
    from kafka import KafkaProducer

    from ingest.stream import StreamConsumer
    from ingest.stream_records import EndRecord, encode
    from schemas.trace import TraceHeader, TraceStep

    secret, email, other = (
        "sk-proj-A1b2C3d4E5f6G7h8I9j0K1l2",
        "dana.ruiz@northwind.example",
        "li@contoso.example",
    )
    topics = new_topics(bootstrap, 1, "steps", "dlq", "closed")
    items = [
        TraceHeader(trace_id="r1", task=f"help {email}"),
        *(
            TraceStep(step_id=f"s{i}", index=i, actor="ops", content=text)
            for i, text in enumerate([f"key={secret}", f"mail {email}", f"cc {other}"])
        ),
        EndRecord(trace_id="r1"),
    ]
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for item in items:
        producer.send(topics["steps"], key=b"r1", value=encode(item))
    producer.flush()
    producer.close()
    consumer = StreamConsumer(pg_store, _config(bootstrap, topics, redact=True))
    with running(consumer):
        wait_until(lambda: count_type(pg_store, "TraceClosed") == 1, 30, "the trace closed")

    contents = [
        e.payload["step"]["content"] for e in pg_store.read_stream("trace-r1") if e.type == "StepRecorded"
    ]
    assert contents == [
        "key=[REDACTED_API_KEY_1]",
        "mail [REDACTED_EMAIL_1]",  # the header's e-mail: one placeholder across the trace's records
        "cc [REDACTED_EMAIL_2]",
    ]
    stored = json.dumps([e.payload for e in pg_store.read_all()])
    assert secret not in stored and email not in stored and other not in stored
    assert "help [REDACTED_EMAIL_1]" in stored
    assert "r1" not in consumer.redaction._open  # a closed trace's mapping is dropped


def test_records_in_any_importers_format_are_stored_once_and_conflicts_dead_lettered(
    bootstrap: str, pg_store
) -> None:
    """Documents in importer formats beside canonical lines; a trace and a document published twice
    are stored once; a document that would merge into a stored trace, and one its importer cannot
    read, are dead-lettered with the reason."""
    from ingest.stream import StepPublisher, StreamConsumer
    from schemas.trace import TraceHeader, TraceStep

    topics = new_topics(bootstrap, 2, "steps", "dlq", "closed")
    otel = (FIXTURES / "otel_genai.json").read_bytes()
    spans = (FIXTURES / "openinference_spans.jsonl").read_bytes()
    (oi,) = import_file(FIXTURES / "openinference_spans.jsonl")
    oi_id = oi.header.trace_id
    publish_traces(bootstrap, topics["steps"], {"can-1": 3})
    with StepPublisher(bootstrap, topics["steps"]) as pub:
        pub.document(otel, "otel-genai", name="otel_genai.json")
        pub.document(b'{"history": "not a list"}', "whowhen", name="12.json")
        pub.start_trace(TraceHeader(trace_id=oi_id))  # a trace streamed step by step ...
        pub.step(oi_id, TraceStep(step_id="s0", index=0, actor="planner", content="started here"))
        pub.document(spans, "auto", name="spans.jsonl", key=oi_id)  # ... is not merged with a document
        pub.document(otel, "otel-genai", name="otel_genai.json")  # published again
    publish_traces(bootstrap, topics["steps"], {"can-1": 3})  # published again

    consumer = StreamConsumer(pg_store, _config(bootstrap, topics))
    with running(consumer):
        published = 2 * 5 + 4 + 2  # can-1 twice (header, 3 steps, end), 4 documents, a header and a step
        wait_until(lambda: consumer.metrics.total("records_total") == published, 30, "every record consumed")

    (otel_trace,) = import_file(FIXTURES / "otel_genai.json")
    otel_id, otel_steps = otel_trace.header.trace_id, list(otel_trace.steps())
    assert load_trace(pg_store, otel_id).steps == otel_steps
    assert load_trace(pg_store, otel_id).header.source == "otel_genai.json"
    _expect_exactly_once(
        pg_store, {"can-1": 3, otel_id: len(otel_steps), oi_id: 1}, closed=2
    )  # oi_id stays open
    assert consumer.metrics.total("dead_letters_total") == 2
    keys = [e.idempotency_key for e in pg_store.read_stream(f"trace-{otel_id}")]
    assert len(keys) == len(otel_steps) + 2 and all(k.startswith(f"kafka:{topics['steps']}/") for k in keys)
    headers = [{k: v.decode() for k, v in r.headers} for r in read_topic(bootstrap, topics["dlq"], 2)]
    letters = {h["dlq.kind"]: h for h in headers}
    assert "12.json" in letters["wrong_schema"]["dlq.reason"]
    assert f"trace '{oi_id}' is already stored" in letters["conflict"]["dlq.reason"]
    notices = [json.loads(n.value) for n in read_topic(bootstrap, topics["closed"], 4)]
    assert sorted((n["trace_id"], n["step_count"]) for n in notices) == sorted(
        [("can-1", 3), ("can-1", 3), (otel_id, len(otel_steps)), (otel_id, len(otel_steps))]
    )  # each announced again when published again: the workers skip what they audited


def test_a_trace_without_end_record_closes_when_idle(bootstrap: str, pg_store) -> None:
    from ingest.stream import StreamConsumer

    topics = new_topics(bootstrap, 1, "steps", "dlq", "closed")
    publish_traces(bootstrap, topics["steps"], {"quiet": 2}, end=False)
    consumer = StreamConsumer(pg_store, _config(bootstrap, topics, idle_close_s=1.0))
    with running(consumer):
        wait_until(lambda: count_type(pg_store, "TraceClosed") == 1, 30, "the idle close")
    closed = next(pg_store.read_all(types=["TraceClosed"])).payload
    assert (closed["trace_id"], closed["step_count"], closed["reason"]) == ("quiet", 2, "idle")
    (notice,) = read_topic(bootstrap, topics["closed"], 1)
    assert json.loads(notice.value) == {"trace_id": "quiet", "step_count": 2, "reason": "idle"}
    assert consumer.metrics.value("open_traces") == 0


def test_crash_between_append_and_commit_redelivers_without_duplicates(bootstrap: str, pg_store) -> None:
    """The exact window the design guards: the batch is in the store, the offsets are not committed."""
    from ingest.stream import StreamConsumer
    from ingest.stream_records import Parsed, parse_record
    from ingest.stream_store import Coords, group_by_trace, write_batch

    topics = new_topics(bootstrap, 2, "steps", "dlq", "closed")
    traces = {f"crash-{i}": 6 for i in range(10)}
    publish_traces(bootstrap, topics["steps"], traces)
    first = StreamConsumer(pg_store, _config(bootstrap, topics, max_batch=30))
    polled = wait_until(lambda: first.consumer.poll(timeout_ms=500), 20, "a first batch")
    parsed = []
    for recs in polled.values():
        for r in recs:
            p = parse_record(r.key, r.value, r.headers)
            assert isinstance(p, Parsed)
            parsed.append((p.trace_id, p.item, Coords(r.topic, r.partition, r.offset)))
    write_batch(pg_store, group_by_trace(parsed).values(), source="test")  # stored ...
    first.producer.close()
    first.consumer.close(autocommit=False)  # ... and gone before the commit
    stored_before = count_type(pg_store, "StepRecorded")
    assert stored_before > 0

    second = StreamConsumer(pg_store, _config(bootstrap, topics))
    with running(second):
        total = sum(n + 2 for n in traces.values())  # header + steps + end
        wait_until(lambda: second.metrics.value("records_total") == total, 30, "every record re-delivered")
    _expect_exactly_once(pg_store, traces)


def _polling(consumer, go: threading.Event, stop: threading.Event) -> threading.Thread:
    """A group member that polls while ``go`` is set (it stays in the group while it waits)."""

    def body() -> None:
        while not stop.is_set():
            if go.wait(0.1):
                consumer.poll(timeout_ms=100)

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    return thread


def test_a_commit_refused_for_a_rebalance_is_made_at_close(bootstrap: str, pg_store, caplog) -> None:
    """SIGTERM while the consumer waits for a rebalance to end: its batch's commit is refused, and
    close finishes the rebalance (kafka-python does so only inside poll) and commits, so stored
    work never shows as lag. The other members read another topic, so the steps partition stays
    with the consumer."""
    from kafka.admin import KafkaAdminClient
    from kafka.errors import RebalanceInProgressError
    from kafka.structs import OffsetAndMetadata

    from ingest.stream import StreamConsumer
    from ingest.stream_loop import GroupMember, group_consumer

    topics = new_topics(bootstrap, 1, "steps", "dlq", "closed", "other")
    publish_traces(bootstrap, topics["steps"], {"rebalanced": 3})
    config = _config(bootstrap, topics)
    first = StreamConsumer(pg_store, config)
    polled = wait_until(lambda: first.consumer.poll(timeout_ms=500), 20, "a first batch")
    (tp,) = polled
    others = [group_consumer(topics["other"], GroupMember(bootstrap), config.group, 10) for _ in range(2)]
    go, stop = [threading.Event(), threading.Event()], threading.Event()
    threads = [_polling(c, g, stop) for c, g in zip(others, go, strict=True)]
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    state = lambda: admin.describe_groups([config.group])[config.group]  # noqa: E731
    try:
        go[0].set()  # the second member joins, the consumer rejoins with it
        wait_until(lambda: first.consumer.poll(timeout_ms=100) is not None and len(state()["members"]) == 2
                   and state()["group_state"] == "Stable", 30, "two members")  # fmt: skip
        go[0].clear()  # ... and stops polling: the next rebalance waits for it
        go[1].set()  # a third member joins

        def refused() -> bool:  # the consumer has sent its join and waits: a commit is refused
            first.consumer.poll(timeout_ms=100)
            try:
                first.consumer.commit({tp: OffsetAndMetadata(0, None, -1)})
            except RebalanceInProgressError:
                return True
            return False

        wait_until(refused, 30, "the consumer to wait in a rebalance")
        first.loop.commit(polled)
        assert first.metrics.value("commit_failures_total") == 1
        go[0].set()  # the second member polls again: the rebalance can end once the consumer polls
        first.close()
    finally:
        stop.set()
        for t, c in zip(threads, others, strict=True):
            t.join(timeout=30)
            c.close()
        admin.close()
    (lag,) = partition_lag(bootstrap, config.group, topics["steps"])
    assert lag.committed == polled[tp][-1].offset + 1
    said = [r.getMessage() for r in caplog.records if r.name == "auditor.stream"]
    assert sum(m.startswith("offset commit failed") for m in said) == 1  # once, not at every poll
    assert any(m.startswith("offset commit made after") for m in said)


def _consume_cmd(bootstrap: str, topics: dict[str, str], store_url: str) -> list[str]:
    return [
        sys.executable, "-m", "auditor.surfaces.cli.main", "--store", store_url, "stream", "consume",
        "--bootstrap", bootstrap, "--topic", topics["steps"], "--group", f"g-{topics['steps']}",
        "--dead-letter-topic", topics["dlq"], "--closed-topic", topics["closed"],
        "--instance-id", "consumer-0", "--max-batch", "150",
    ]  # fmt: skip


def test_kill_9_mid_batch_then_restart_stores_every_step_once_in_order(
    bootstrap: str, pg_store, pg_schema_url: str, tmp_path: Path
) -> None:
    topics = new_topics(bootstrap, 2, "steps", "dlq", "closed")
    traces = {f"k9-{i}": 80 for i in range(60)}  # 4,800 steps, 32+ batches
    publish_traces(bootstrap, topics["steps"], traces)
    cmd = _consume_cmd(bootstrap, topics, pg_schema_url)
    log = tmp_path / "consume.log"  # a file, not a pipe nobody reads: a full pipe blocks the consumer
    proc = subprocess.Popen(cmd, cwd=REPO, stderr=log.open("w"), stdout=subprocess.DEVNULL)
    try:
        seen = wait_until(  # a process's start-up alone takes tens of seconds on a loaded machine
            lambda: count_type(pg_store, "StepRecorded"), 120, "the first stored batch", every=0.02
        )
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    except AssertionError:
        print(f"--- consume.log\n{log.read_text()[-5000:]}")
        raise
    finally:
        if proc.poll() is None:
            proc.kill()
    at_kill = count_type(pg_store, "StepRecorded")
    assert 0 < seen <= at_kill < sum(traces.values()), "the kill must land in the middle of consumption"

    proc = subprocess.Popen(cmd, cwd=REPO, stderr=log.open("a"), stdout=subprocess.DEVNULL)
    try:
        wait_until(
            lambda: count_type(pg_store, "TraceClosed") == len(traces), 120, "all traces after restart"
        )
    except AssertionError:
        print(f"--- consume.log\n{log.read_text()[-5000:]}")
        raise
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    _expect_exactly_once(pg_store, traces)


def _kafka_local(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(REPO / "scripts" / "kafka-local"), *args], capture_output=True, text=True, timeout=120
    )


def _free_port_pair() -> int:
    """A loopback port that is free, and the next one too (kafka-local's controller listens there)."""
    for _ in range(100):
        with socket.socket() as first:
            first.bind(("127.0.0.1", 0))
            port = first.getsockname()[1]
            with socket.socket() as second:
                try:
                    second.bind(("127.0.0.1", port + 1))
                except OSError:
                    continue
        return port
    raise RuntimeError("no two adjacent free loopback ports")


@pytest.fixture
def own_broker(bootstrap: str) -> Iterator[str]:
    """A broker of the test's own, started by scripts/kafka-local on free ports and removed after: a
    test that restarts its broker must not restart the one the tests in other processes are using."""
    port = bootstrap.rsplit(":", 1)[1]
    if _kafka_local("status", "--port", port).returncode != 0:
        if os.environ.get("AUDITOR_REQUIRE_KAFKA") == "1":
            pytest.fail(f"the broker on port {port} is not managed by scripts/kafka-local")
        pytest.skip(
            "the broker is not managed by scripts/kafka-local, so no broker of its own can start here"
        )
    own = str(_free_port_pair())
    started = _kafka_local("start", "--port", own, "--fresh")
    try:
        assert started.returncode == 0, started.stderr
        yield f"127.0.0.1:{own}"
    finally:
        _kafka_local("stop", "--port", own)
        cache = Path(os.environ.get("KAFKA_LOCAL_CACHE", REPO / ".cache" / "kafka"))
        shutil.rmtree(cache / "run" / own, ignore_errors=True)


def test_broker_restart_during_consumption_loses_and_duplicates_nothing(own_broker: str, pg_store) -> None:
    from ingest.stream import StreamConsumer

    bootstrap, port = own_broker, own_broker.rsplit(":", 1)[1]
    topics = new_topics(bootstrap, 2, "steps", "dlq", "closed")
    before = {f"rb-a{i}": 40 for i in range(20)}
    after = {f"rb-b{i}": 40 for i in range(20)}
    publish_traces(bootstrap, topics["steps"], before)
    consumer = StreamConsumer(pg_store, _config(bootstrap, topics, max_batch=100, retry_backoff_s=0.5))
    with running(consumer):
        wait_until(lambda: count_type(pg_store, "StepRecorded"), 30, "consumption to start", every=0.02)
        restarted = _kafka_local("restart", "--port", port)
        assert restarted.returncode == 0, restarted.stderr
        publish_traces(bootstrap, topics["steps"], after)
        wait_until(
            lambda: count_type(pg_store, "TraceClosed") == len(before) + len(after),
            60,
            "consumption to resume",
        )
    _expect_exactly_once(pg_store, {**before, **after})
    lags = partition_lag(bootstrap, f"g-{topics['steps']}", topics["steps"])
    assert [lag.lag for lag in lags] == [0, 0]  # every offset committed once the batches were stored

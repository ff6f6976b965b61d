"""Redaction on every path into the store, beyond `auditor ingest` (tested with the sampling
commands): `auditor review`, the HTTP API's submit for audit, and the stream path's redaction over
the batch writer (the Kafka consumer with --redact runs on a real broker in test_stream_kafka.py). In
each, the secrets never reach the store and placeholders do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor.audit.review import review_file
from auditor.core.errors import InputError
from auditor.core.store import open_store
from ingest.redact import Redactor
from ingest.stream_records import EndRecord, encode, parse_record
from ingest.stream_redact import StreamRedaction
from ingest.stream_store import Coords, group_by_trace, write_batch
from schemas.trace import TraceHeader, TraceStep
from tests.cli_helpers import run

SECRET, EMAIL, OTHER = (
    "sk-proj-A1b2C3d4E5f6G7h8I9j0K1l2",
    "dana.ruiz@northwind.example",
    "li.wei@contoso.example",
)
TICKET = "TCK-4821"


def _trace_file(folder: Path, trace_id: str = "redact-paths") -> Path:
    lines = [
        {"record": "header", "trace_id": trace_id, "task": f"answer {EMAIL} about {TICKET}"},
        {"step_id": "a", "index": 0, "actor": "ops", "recipients": ["billing"], "content": f"key={SECRET}"},
        {"step_id": "b", "index": 1, "actor": "billing", "content": f"mail {EMAIL}; ticket {TICKET}"},
    ]
    path = folder / "trace.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def _stored(store) -> str:  # type: ignore[no-untyped-def]
    return json.dumps([e.payload for e in store.read_all()], ensure_ascii=False)


def _assert_redacted(text: str, values: tuple[str, ...] = (SECRET, EMAIL, TICKET)) -> None:
    for value in values:
        assert value not in text
    assert "[REDACTED_EMAIL_1]" in text and "[REDACTED_API_KEY_1]" in text


# -- auditor review ---------------------------------------------------------------------------


def test_review_redacts_before_storing_and_auditing(tmp_path):
    proc = run(
        ["review", str(_trace_file(tmp_path)), "--redact-pattern", r"TICKET=(?P<value>TCK-\d{4})", "--json"],
        tmp_path,
    )
    assert proc.returncode in (0, 1), proc.stderr
    assert not any(v in proc.stdout for v in (SECRET, EMAIL, TICKET))  # the report saw only placeholders
    store = open_store(f"sqlite:///{tmp_path / 'auditor.db'}")
    try:
        text = _stored(store)
    finally:
        store.close()
    _assert_redacted(text)
    assert "[REDACTED_TICKET_1]" in text and json.loads(proc.stdout)["trace_id"] == "redact-paths"


def test_review_file_stores_and_audits_the_redacted_trace(tmp_path, sqlite_store):
    path = _trace_file(tmp_path)
    [outcome] = review_file(sqlite_store, path, redact=True)
    assert outcome.trace.steps[1].content == "mail [REDACTED_EMAIL_1]; ticket TCK-4821"
    assert outcome.trace.header.task == "answer [REDACTED_EMAIL_1] about TCK-4821"
    _assert_redacted(_stored(sqlite_store), (SECRET, EMAIL))
    plain = open_store(f"sqlite:///{tmp_path / 'plain.db'}")
    try:
        review_file(plain, path)
        assert EMAIL in _stored(plain)  # redaction is opt-in
    finally:
        plain.close()


def test_a_bad_redact_pattern_is_an_input_error(tmp_path):
    for bad in ("NOEQUALS", "X=(unclosed"):
        proc = run(["review", str(_trace_file(tmp_path)), "--redact-pattern", bad], tmp_path)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr and "--redact-pattern" in proc.stderr


# -- the HTTP API -------------------------------------------------------------------------------


def test_submit_for_audit_redacts_when_asked_or_when_the_server_does(tmp_path, sqlite_store):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from auditor.surfaces.server import ServerConfig, create_app
    from auditor.surfaces.server.tokens import create_token

    token = create_token(sqlite_store, "ops", ["ingest", "read"])[0]
    h = {"Authorization": f"Bearer {token}"}
    body = _trace_file(tmp_path).read_bytes()
    with TestClient(create_app(ServerConfig(), store=sqlite_store)) as client:
        r = client.post(
            "/api/audit", params={"filename": "t.jsonl", "redact": "true"}, content=body, headers=h
        )
        assert r.status_code == 201, r.text
    forced = ServerConfig(redact=True, redact_patterns={"TICKET": r"TCK-\d{4}"})
    with TestClient(create_app(forced, store=sqlite_store)) as client:
        other = body.replace(b"redact-paths", b"redact-paths-2")
        r = client.post("/api/audit", params={"filename": "t.jsonl"}, content=other, headers=h)
        assert r.status_code == 201, r.text
    text = _stored(sqlite_store)
    assert EMAIL not in text and SECRET not in text and "[REDACTED_EMAIL_1]" in text
    assert "[REDACTED_TICKET_1]" in text  # the server's own pattern, on the second trace


# -- the stream path: the redaction over the batch writer (the consumer on a real broker is in
# tests/test_stream_kafka.py) --------------------------------------------------------------------


def _steps(trace_id: str, texts: list[str], first: int = 0) -> list[TraceStep]:
    return [
        TraceStep(step_id=f"s{first + i}", index=first + i, actor="ops", content=t)
        for i, t in enumerate(texts)
    ]


def test_stream_redaction_over_the_batch_writer(sqlite_store):
    redaction = StreamRedaction(sqlite_store, {"TICKET": r"TCK-\d{4}"})
    batches = [
        [TraceHeader(trace_id="w1", task=TICKET), *_steps("w1", [f"{EMAIL} {TICKET}"])],
        [*_steps("w1", [f"again {EMAIL}, then {OTHER}"], first=1), EndRecord(trace_id="w1")],
    ]
    offset = 0
    for batch in batches:
        parsed = []
        for item in batch:
            result = redaction.parsed(parse_record(b"w1", encode(item)))
            parsed.append((result.trace_id, result.item, Coords("steps", 0, offset)))
            offset += 1
        written = write_batch(sqlite_store, group_by_trace(parsed).values(), source="kafka:steps")
        for closed in written.closed:
            redaction.forget(closed.trace_id)
    contents = [
        e.payload["step"]["content"] for e in sqlite_store.read_stream("trace-w1") if e.type == "StepRecorded"
    ]
    assert contents == [
        "[REDACTED_EMAIL_1] [REDACTED_TICKET_1]",
        "again [REDACTED_EMAIL_1], then [REDACTED_EMAIL_2]",  # the same value, the same placeholder
    ]
    assert redaction._open == {}


def test_number_after_continues_the_stored_numbering():
    r = Redactor()
    r.number_after('{"content": "[REDACTED_EMAIL_2] and [REDACTED_URL_PASSWORD_1]"}')
    assert r.text(f"{EMAIL} https://bot:hunter22@db.internal/x") == (
        "[REDACTED_EMAIL_3] https://bot:[REDACTED_URL_PASSWORD_2]@db.internal/x"
    )
    assert r.replaced == {"EMAIL": 1, "URL_PASSWORD": 1}  # counts this pass only


# -- the leaks of issue 31 (item 2), one by one; tests/test_redact_property.py plants them anywhere


def test_every_string_is_redacted_at_any_depth_after_decoding():
    r = Redactor()
    step = TraceStep(
        step_id="a",
        index=0,
        actor="ops",
        kind="tool_call",
        content="aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        tool={"name": "deploy", "arguments": {"kind": SECRET, "record": {"index": EMAIL}}},
        raw={"timestamp": SECRET, "trace_id": EMAIL, SECRET: "a key", "password": "hunter22"},
    )
    out = r.step(step).model_dump(mode="json")
    text = json.dumps(out, ensure_ascii=False)
    assert SECRET not in text and EMAIL not in text and "wJalr" not in text and "hunter22" not in text
    assert (out["kind"], out["index"], out["step_id"]) == ("tool_call", 0, "a")  # the structure stays
    assert (
        r.text("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG") == "AWS_SECRET_ACCESS_KEY=[REDACTED_SECRET_3]"
    )
    assert r.text("mail dana@bücher.example now") == "mail [REDACTED_EMAIL_2] now"
    pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7x\nZm9v==\n-----END RSA PRIVATE KEY-----"
    assert r.text(f"key: {pem}\nthanks") == "key: [REDACTED_PRIVATE_KEY_1]\nthanks"
    escaped = (
        '\n{"note": "sk\\u002dproj-A1b2C3d4E5f6G7h8I9j0K1l2"}'  # a JSON string, as an attribute holds it
    )
    assert r.text(escaped) == '\n{"note": "[REDACTED_API_KEY_1]"}'


def test_a_trace_id_that_holds_a_secret_is_refused_not_stored():
    with pytest.raises(InputError, match="trace id holds a value that --redact removes"):
        Redactor().header(TraceHeader(trace_id=f"run-{SECRET}"))


def test_span_redaction_walks_every_field_but_the_structural_ones():
    from ingest.otlp_request import decode_json
    from ingest.span_redact import SpanRedaction

    span = {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": "eee19b7ec3c1b174",
        "name": "chat",
        "startTimeUnixNano": "1",
        "endTimeUnixNano": "2",
        "traceState": f"vendor={SECRET}",
        "links": [{"traceId": "5b8efff798038103d269b633813fc60d", "spanId": "1" * 16, "traceState": EMAIL}],
        "extraField": SECRET,
        "attributes": [
            {"key": "password", "value": {"stringValue": "hunter22"}},
            {"key": "args", "value": {"stringValue": json.dumps({"kind": SECRET, "record": EMAIL})}},
            {"key": "n", "value": {"intValue": "12345678901"}},
        ],
    }
    body = json.dumps({"resourceSpans": [{"scopeSpans": [{"scope": {"name": EMAIL}, "spans": [span]}]}]})
    [received] = decode_json(body.encode()).spans
    redacted = SpanRedaction({"DIGITS": r"\d{9,}"}).span(received, tuple)
    text = json.dumps(redacted.payload(), ensure_ascii=False)
    assert SECRET not in text and EMAIL not in text and "hunter22" not in text
    assert redacted.span["spanId"] == "eee19b7ec3c1b174" and redacted.span["endTimeUnixNano"] == "2"
    assert redacted.span["attributes"][2]["value"] == {"intValue": "12345678901"}  # a typed number stays

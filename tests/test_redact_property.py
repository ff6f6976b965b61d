"""No secret gets past --redact, wherever it sits (issue 31, item 2).

A property test: a secret (an API key, an AWS secret access key, an e-mail address with a non-ASCII
domain, a PEM private key, a key hidden behind a JSON escape) is planted at a random place of a
real example file of every importer (the README's format table, tests/fixtures, the shared data),
or of an OTLP export request: a string replaced or added to, a new field, a new key. The real
redacting ingest (`auditor ingest --redact`'s pipeline; the OTLP server's span assembly with its
redaction, up to the assembled, imported trace) writes a real SQLite store, and the stored bytes,
the database file and its WAL, never hold the secret. A file the importer refuses stores nothing,
and is checked the same way."""

from __future__ import annotations

import functools
import json
import sqlite3
import tempfile
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.core.errors import InputError
from auditor.core.store import open_store
from ingest import detect, ingest_path, names
from ingest.otlp_request import decode_json
from ingest.span_assembly import AssemblySettings, SpanAssembly
from ingest.span_redact import SpanRedaction
from tests.conftest import DATA, REPO

FIXTURES = REPO / "tests" / "fixtures"
MAST = DATA / "mast" / "derived" / "traces"
EXAMPLES: dict[str, Path] = {  # the smallest real example of each importer
    "canonical": REPO / "examples" / "renewal_drift.jsonl",
    "whowhen": DATA / "whowhen" / "hand-crafted" / "55.json",
    "trail": FIXTURES / "ingest" / "trail_gaia.json",
    "openinference": FIXTURES / "real" / "openinference-genai" / "openinference_client_span_tool_calls.json",
    "vercel-ai": FIXTURES / "real" / "vercel-ai" / "ai-generateText.json",
    "otel-genai": FIXTURES
    / "real"
    / "openinference-genai"
    / "otel_genai_deprecated_client_span_tool_calls.json",
    "inspect": FIXTURES / "ingest" / "inspect_eval.json",
    "swe-agent": FIXTURES / "real" / "swe-agent" / "function_calling_simple.traj",
    "openhands": FIXTURES / "real" / "openhands" / "basic_interactions.json",
    "claude-code": FIXTURES / "real" / "claude-code" / "pytest_edit_commit_session.jsonl",
    "codex": FIXTURES / "real" / "codex" / "vscode_shell_exit127_interrupted.jsonl",
    "aider": FIXTURES / "real" / "aider" / "whole_edit_lint_autofix_commits_chinese_chat_history.md",
    "gemini-cli": FIXTURES
    / "real"
    / "gemini-cli"
    / "interactive_python_agent_pip_exit127_venv_rewrite_unrun.json",
    "opencode": FIXTURES / "real" / "opencode" / "run_json_git_commit_exit128_retried.jsonl",
    "cursor-agent": FIXTURES / "real" / "cursor-agent" / "read_then_edit_overwrite.ndjson",
    "codex-exec": FIXTURES / "real" / "codex-exec" / "fieldguide_nvim_edit_append_mcp_blocked_write.jsonl",
    "claude-code-stream": FIXTURES
    / "real"
    / "claude-code-stream"
    / "trackgentic_bun_test_edit_permission_denied.jsonl",
    "hyperagent": MAST / "06_Round2_HyperAgent_SWE-Bench-Lite.json",
    "ag2": MAST / "07_Round2_AG2_GSM-Plus.json",
    "metagpt": MAST / "14_Round3_MetaGPT_ProgramDev.json",
    "metagpt-text": MAST / "16_Generlazability_MetaGPT_MMLU.txt",
    "appworld": MAST / "00_Round1_AppWorld_Test-C.txt",
    "chatdev": FIXTURES / "real" / "chatdev" / "20230628184918.log",
    "magentic-one": MAST / "17_Generlazability_GAIA_Magentic.txt",
    "openmanus": MAST / "18_Generlazability_GAIA_OpenManus.txt",
    "langchain-messages": FIXTURES / "ingest" / "langgraph_state.json",
    "anthropic-messages": FIXTURES / "real" / "litellm" / "claude_code_request.json",
    "openai-chat": FIXTURES / "real" / "mistral-common" / "get_weather_full.json",
    "chat-jsonl": FIXTURES / "real" / "nemo-automodel" / "openai_chat.jsonl",
    "goose": FIXTURES / "ingest" / "goose_sessions.db",  # the real dump loaded (tests/test_goose.py)
}
MAD = DATA / "mast" / "MAD_human_labelled_dataset.json"  # one record of it: the file is 2.6 MB
OTLP = FIXTURES / "real" / "openinference-genai" / "otel_genai_client_span_tool_calls.json"

TOKENS = st.text("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghjkmnpqrstuvwxyz23456789", min_size=24, max_size=24)
# kind -> (the planted text for a random token, the token it hides)
SECRETS: dict[str, Callable[[str], str]] = {
    "api-key": lambda t: f"sk-proj-{t}",
    "aws": lambda t: f"aws_secret_access_key = {t}/K7MDENG",
    "aws-env": lambda t: f"AWS_SECRET_ACCESS_KEY={t}",
    "email": lambda t: f"{t}@bücher-straße.example",
    "pem": lambda t: f"-----BEGIN RSA PRIVATE KEY-----\nMIIE{t}\n{t[::-1]}==\n-----END RSA PRIVATE KEY-----",
    "escaped-json": lambda t: '\n{"note": "sk\\u002dproj-' + t + '"}',
    "json-password": lambda t: json.dumps({"password": t, "kind": f"sk-proj-{t}"}),
}


def _places(doc: Any) -> tuple[list[tuple[Any, Any]], list[dict]]:
    """Every string of a JSON value as (its container, its key or index), and every object."""
    strings: list[tuple[Any, Any]] = []
    objects: list[dict] = []
    stack = [doc]
    while stack:
        item = stack.pop()
        pairs = item.items() if isinstance(item, dict) else enumerate(item)
        if isinstance(item, dict):
            objects.append(item)
        for key, value in pairs:
            if isinstance(value, str):
                strings.append((item, key))
            elif isinstance(value, dict | list):
                stack.append(value)
    return strings, objects


def plant_json(doc: Any, secret: str, where: int, how: str) -> None:
    """Put ``secret`` into ``doc`` in place: replacing or added to a string, or a new field or key."""
    strings, objects = _places(doc)
    if how in ("replace", "append") and strings:
        container, key = strings[where % len(strings)]
        container[key] = secret if how == "replace" else f"{container[key]} {secret} "
    elif how == "key":
        objects[where % len(objects)][secret] = "value"
    else:
        objects[where % len(objects)]["planted"] = secret


def planted_file(source: Path, folder: Path, secret: str, where: int, how: str) -> Path:
    """A copy of ``source`` with the secret planted: in its JSON, in one JSON line, or one text line."""
    target = folder / source.name
    if source.suffix == ".db":  # Goose's store: the secret planted in one message's parts
        target.write_bytes(source.read_bytes())
        with closing(sqlite3.connect(target)) as db, db:
            rows = db.execute("SELECT id, content_json FROM messages ORDER BY id").fetchall()
            row, parts = rows[where % len(rows)]
            doc = json.loads(parts)
            plant_json(doc, secret, where // len(rows), how)
            db.execute("UPDATE messages SET content_json = ? WHERE id = ?", (json.dumps(doc), row))
        return target
    text = source.read_text(encoding="utf-8")
    if source.suffix == ".jsonl":
        lines = text.splitlines()
        i = where % len(lines)
        record = json.loads(lines[i])
        plant_json(record, secret, where // len(lines), how)
        lines[i] = json.dumps(record, ensure_ascii=False)
        text = "\n".join(lines) + "\n"
    elif source.suffix in (".json", ".traj"):
        doc = json.loads(text)
        plant_json(doc, secret, where, how)
        text = json.dumps(doc, ensure_ascii=False, indent=1)
    else:  # a text log: the secret added to one of its lines, or as a line of its own
        lines = text.splitlines()
        i = where % len(lines)
        lines[i] = f"{lines[i]} {secret}" if how != "replace" else secret
        text = "\n".join(lines) + "\n"
    target.write_text(text, encoding="utf-8")
    return target


def assert_never_stored(db: Path, token: str) -> None:
    stored = b"".join(p.read_bytes() for p in (db, db.with_name(db.name + "-wal")) if p.exists())
    for form in {token, json.dumps(token)[1:-1]}:
        assert form.encode() not in stored, f"{token!r} is in the stored bytes"


PLANT = settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)


PLANTED = given(  # which secret, where, and how it is planted
    kind=st.sampled_from(sorted(SECRETS)),
    token=TOKENS,
    where=st.integers(0, 10**6),
    how=st.sampled_from(["replace", "append", "field", "key"]),
)


@functools.cache
def _example(name: str) -> Path | None:
    """The importer's example: listed above, one record of the MAD file, an OpenHands conversation's
    events as one list, or the smallest file in
    tests/fixtures/real/<name>/ (where a new importer's real examples go); None if it has none."""
    if name == "mad":
        if not MAD.is_file():
            return MAD
        path = Path(tempfile.mkdtemp()) / MAD.name
        path.write_text(json.dumps(json.loads(MAD.read_text(encoding="utf-8"))[:1]), encoding="utf-8")
        return path
    if name == "openhands-sdk":  # a persisted conversation is many files: its events as one list
        events = sorted((FIXTURES / "real" / name / "terminal_pwd_finish_conversation" / "events").iterdir())
        path = Path(tempfile.mkdtemp()) / "history.json"
        path.write_text(
            json.dumps([json.loads(p.read_text(encoding="utf-8")) for p in events]), encoding="utf-8"
        )
        return path
    if name in EXAMPLES:
        return EXAMPLES[name]
    found = sorted((FIXTURES / "real" / name).glob("*"), key=lambda p: p.stat().st_size)
    return found[0] if found else None


def test_every_importer_has_an_example_of_its_format() -> None:
    missing = [n for n in names() if _example(n) is None]
    assert not missing, f"add a real example of {missing} under tests/fixtures/real/<format>/"
    for name in names():
        path = _example(name)
        if path is not None and path.is_file():
            assert detect(path)[0] == name, path


@pytest.mark.parametrize("name", names())
@PLANT
@PLANTED
def test_a_secret_planted_in_any_importers_record_is_never_stored(
    name: str, kind: str, token: str, where: int, how: str
) -> None:
    source = _example(name)
    if source is None or not source.is_file():
        pytest.skip(f"real data not present ({source})")
    with tempfile.TemporaryDirectory() as folder:
        path = planted_file(source, Path(folder), SECRETS[kind](token), where, how)
        db = Path(folder) / "auditor.db"
        store = open_store(f"sqlite:///{db}")
        try:
            ingest_path(store, path, name, redact=True)
        except InputError:
            pass  # refused (a secret in a trace id, a field that must be an enum): nothing stored
        finally:
            store.close()
        assert_never_stored(db, token)


@PLANT
@PLANTED
def test_a_secret_planted_in_an_otlp_request_is_never_stored(
    kind: str, token: str, where: int, how: str
) -> None:
    """A real span example as an OTLP JSON request, with traceState and a link, the secret planted
    anywhere; the redacting span assembly stores the spans, then completes and imports the trace."""
    attributes = [
        {"key": k, "value": {"stringValue": v if isinstance(v, str) else json.dumps(v)}}
        for k, v in json.loads(OTLP.read_text(encoding="utf-8")).items()
    ]
    span = {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": "eee19b7ec3c1b174",
        "name": "chat gpt-4o",
        "kind": 3,
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000001000000000",
        "traceState": "vendor=abc",
        "attributes": attributes,
        "events": [{"timeUnixNano": "1700000000500000000", "name": "gen_ai.choice", "attributes": []}],
        "links": [
            {"traceId": "5b8efff798038103d269b633813fc60d", "spanId": "eee19b7ec3c1b175", "traceState": "a=b"}
        ],
        "status": {"code": 1, "message": "ok"},
    }
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]}
    doc = {
        "resourceSpans": [{"resource": resource, "scopeSpans": [{"scope": {"name": "s"}, "spans": [span]}]}]
    }
    plant_json(doc, SECRETS[kind](token), where, how)
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "auditor.db"
        store = open_store(f"sqlite:///{db}")
        try:
            try:
                decoded = decode_json(json.dumps(doc, ensure_ascii=False).encode())
            except InputError:
                decoded = None  # refused whole: nothing stored
            if decoded is not None:
                assembly = SpanAssembly(
                    store, AssemblySettings(), "otlp-http", lambda _: None, SpanRedaction()
                )
                assembly.receive(decoded.spans)
                assembly.flush()
        finally:
            store.close()
        assert_never_stored(db, token)

"""The importer contract, written once and run on every registered importer.

For each importer, on a real file (or a hand-written fixture where no real file exists): it is
detected; re-import gives the same step ids and steps; content is verbatim from the source; every
named recipient is named in the source; appending twice appends nothing new; truncated or corrupted
input fails with an InputError naming the line or byte (or, for line logs, yields a prefix).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from auditor.core.errors import InputError
from ingest import ingest_path, open_traces, registry
from ingest.chat_message import object_text
from ingest.registry import detect
from schemas import StepKind
from tests.conftest import DATA, REPO

FIX = REPO / "tests" / "fixtures" / "ingest"
RAW = DATA / "mast" / "derived" / "traces"
SAMPLES: dict[str, Path] = {
    "canonical": REPO / "examples" / "renewal_drift.jsonl",
    "mad": DATA / "mast" / "MAD_human_labelled_dataset.json",
    "whowhen": DATA / "whowhen" / "algorithm-generated" / "10.json",
    "openinference": FIX / "openinference_spans.jsonl",
    "otel-genai": FIX / "otel_genai.json",
    "vercel-ai": REPO / "tests/fixtures/real/vercel-ai/ai_sdk_tool_run.json",
    "trail": FIX / "trail_gaia.json",  # hand-written: TRAIL traces embed gated GAIA data
    "inspect": FIX / "inspect_eval.json",
    "swe-agent": REPO / "tests/fixtures/real/swe-agent/networking_1.traj",
    "mini-swe-agent": REPO / "tests/fixtures/real/mini-swe-agent/sympy__sympy-13852.traj.json",
    "openhands": REPO / "tests/fixtures/real/openhands/wrong_initial_state.json",
    "openhands-sdk": REPO
    / "tests/fixtures/real/openhands-sdk/terminal_pwd_finish_conversation/base_state.json",
    "claude-code": REPO / "tests/fixtures/real/claude-code/pytest_edit_commit_session.jsonl",
    "codex": REPO / "tests/fixtures/real/codex/vscode_shell_exit127_interrupted.jsonl",
    "aider": REPO / "tests/fixtures/real/aider/whole_edit_lint_autofix_commits_chinese_chat_history.md",
    "gemini-cli": REPO
    / "tests/fixtures/real/gemini-cli/interactive_python_agent_pip_exit127_venv_rewrite_unrun.json",
    "opencode": REPO / "tests/fixtures/real/opencode/run_json_five_edits_go_test.jsonl",
    "cursor-agent": REPO / "tests/fixtures/real/cursor-agent/read_then_edit_overwrite.ndjson",
    "codex-exec": REPO / "tests/fixtures/real/codex-exec/fieldguide_nvim_edit_append_mcp_blocked_write.jsonl",
    "claude-code-stream": REPO
    / "tests/fixtures/real/claude-code-stream/trackgentic_bun_test_edit_permission_denied.jsonl",
    "hyperagent": RAW / "06_Round2_HyperAgent_SWE-Bench-Lite.json",
    "ag2": RAW / "07_Round2_AG2_GSM-Plus.json",
    "metagpt": RAW / "04_Round1_MetaGPT_ProgramDev.json",
    "metagpt-text": RAW / "16_Generlazability_MetaGPT_MMLU.txt",
    "appworld": RAW / "00_Round1_AppWorld_Test-C.txt",
    "chatdev": RAW / "15_Generlazability_ChatDev_MMLU.txt",
    "magentic-one": RAW / "17_Generlazability_GAIA_Magentic.txt",
    "openmanus": RAW / "18_Generlazability_GAIA_OpenManus.txt",
    "openai-chat": DATA / "taubench" / "airline" / "runs" / "airline-task000-trial0.json",
    "anthropic-messages": REPO / "tests/fixtures/real/litellm/claude_code_request.json",
    "langchain-messages": FIX / "langgraph_state.json",
    "chat-jsonl": REPO / "tests/fixtures/real/nemo-automodel/openai_chat.jsonl",
    "goose": FIX / "goose_sessions.db",  # the real dump loaded into a database (tests/test_goose.py)
}
NAMES = sorted(SAMPLES)
DATABASES = {"goose"}  # SQLite files: no lines or bytes to name, and their texts in JSON columns


def _dump(path: Path, fmt: str = "auto") -> list[tuple[dict, list[dict]]]:
    return [
        (t.header.model_dump(mode="json"), [s.model_dump(mode="json") for s in t.steps()])
        for t in open_traces(path, fmt)
    ]


def _strings(value: Any, out: list[str]) -> None:
    """Every string in a JSON value (nested JSON strings decoded too; string lists also joined)."""
    if isinstance(value, str):
        out.append(value)
        if value[:1] in "[{":
            with contextlib.suppress(json.JSONDecodeError):
                _strings(json.loads(value), out)
    elif isinstance(value, dict):
        for v in value.values():
            _strings(v, out)
    elif isinstance(value, list):
        if value and all(isinstance(v, str) for v in value):
            out.append("\n".join(value))
        for v in value:
            _strings(v, out)


def _source_texts(path: Path) -> list[str]:
    if path.name == "base_state.json":  # a conversation persisted as files: its events' texts too
        return [t for p in [path, *sorted((path.parent / "events").iterdir())] for t in _file_texts(p)]
    return _file_texts(path)


def _file_texts(path: Path) -> list[str]:
    if path.suffix == ".db":  # Goose's store: the texts of its JSON columns
        out: list[str] = []
        with contextlib.closing(sqlite3.connect(path)) as db:
            for (column,) in db.execute("SELECT content_json FROM messages"):
                _strings(json.loads(column), out)
        return out
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".md":  # a chat log whose lines carry their speaker's mark: also read unmarked
        return [text, "\n".join(_unmarked(line) for line in text.splitlines())]
    if text.lstrip()[:1] not in "[{":
        return [text]
    out: list[str] = []
    try:
        docs = [json.loads(text)]
    except json.JSONDecodeError:
        try:
            docs = [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError:
            return [text]
    for doc in docs:
        _strings(doc, out)
    return out


def _unmarked(line: str) -> str:
    """A line of aider's history without its mark (``#### `` the principal, ``> `` aider) and the
    Markdown line break aider ends it with."""
    for mark in ("#### ", "> "):
        if line.startswith(mark):
            return line[len(mark) :].removesuffix("  ")
    return "" if line.startswith("####") or line.rstrip() == ">" else line.removesuffix("  ")


def test_every_importer_is_in_the_suite():
    assert set(registry) == set(SAMPLES)


@pytest.mark.parametrize("name", NAMES)
def test_detected(name):
    assert detect(SAMPLES[name])[0] == name


@pytest.mark.parametrize("name", NAMES)
def test_reimport_is_stable(name):
    first = _dump(SAMPLES[name], name)
    assert first and first == _dump(SAMPLES[name], name)
    for _, steps in first:
        assert [s["index"] for s in steps] == list(range(len(steps)))
        assert len({s["step_id"] for s in steps}) == len(steps)


def _object_call(step) -> bool:
    """A call the source keeps as an object: its content is that object's JSON (``Call``)."""
    if step.kind is not StepKind.tool_call or not isinstance(step.tool.arguments, dict):
        return False
    return step.content == object_text(step.tool.arguments)


@pytest.mark.parametrize("name", NAMES)
def test_content_is_verbatim_and_recipients_are_named_in_the_source(name):
    texts = _source_texts(SAMPLES[name])
    whole = "\n".join(texts)
    checked = 0
    for trace in open_traces(SAMPLES[name], name):
        for step in trace.steps():
            checked += 1
            if step.content and not _object_call(step):
                assert any(step.content in t for t in texts), (step.step_id, step.content[:80])
            for recipient in step.recipients or []:
                assert recipient in whole, (step.step_id, recipient)
    assert checked, f"no step read from {SAMPLES[name]}"


@pytest.mark.parametrize("name", NAMES)
def test_append_twice_appends_nothing_new(name, sqlite_store):
    first = ingest_path(sqlite_store, SAMPLES[name], name)
    events = sum(1 for _ in sqlite_store.read_all())
    again = ingest_path(sqlite_store, SAMPLES[name], name)
    assert sum(1 for _ in sqlite_store.read_all()) == events
    assert all(s.appended == 0 and s.already_present == s.steps + 1 for s in again)
    assert [s.trace_id for s in first] == [s.trace_id for s in again]


def _consume(path: Path, name: str) -> list[tuple[dict, list[dict]]]:
    return _dump(path, name)


@pytest.mark.parametrize("name", NAMES)
def test_truncated_input_fails_clearly_or_yields_a_prefix(name, tmp_path):
    data = SAMPLES[name].read_bytes()
    cut = tmp_path / ("cut" + SAMPLES[name].suffix)
    cut.write_bytes(data[: int(len(data) * 0.55)])
    try:
        partial = _consume(cut, name)
    except InputError as exc:
        said = str(exc)
        assert str(cut) in said and any(
            w in said for w in ("line ", "byte ", "no steps", "database is damaged")
        )
        return
    # Line logs carry no end marker: what remains must be the same steps, the last one possibly cut.
    full = _dump(SAMPLES[name], name)
    assert len(partial) == 1 and len(full) == 1
    steps, whole = partial[0][1], full[0][1]
    assert 0 < len(steps) <= len(whole)
    assert steps[:-1] == whole[: len(steps) - 1]
    assert whole[len(steps) - 1]["content"].startswith(steps[-1]["content"][:20])


@pytest.mark.parametrize("name", NAMES)
def test_corrupted_input_names_the_byte(name, tmp_path):
    data = SAMPLES[name].read_bytes()
    at = int(len(data) * 0.4)
    bad = tmp_path / ("bad" + SAMPLES[name].suffix)
    bad.write_bytes(data[:at] + b"\x00" + data[at:])
    with pytest.raises(InputError, match="database is damaged" if name in DATABASES else r"byte \d+") as info:
        _consume(bad, name)
    assert str(bad) in str(info.value)

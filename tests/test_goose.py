"""Goose's session store (sessions.db): the importer on a real recorded store (the project's
``sqlite3 .dump`` of it, loaded into a database here; tests/fixtures/real/SOURCES.md), copies of it
changed where a case needs it, and bad input."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest

from auditor.audit.detectors.test_runs import TestRunFacts, command_of
from auditor.audit.engine import run_rules_audit
from auditor.audit.report.validator import validate_report
from auditor.core.errors import InputError
from ingest.registry import detect, get, open_traces
from schemas import ActorKind, StepKind, Trace
from tests.conftest import REPO

DUMP = REPO / "tests" / "fixtures" / "real" / "goose" / "shell_and_mcp_tool_error_sessions_db.sql"
SHIPPED = REPO / "tests" / "fixtures" / "ingest" / "goose_sessions.db"


def _store(folder: Path, change: Callable[[sqlite3.Connection], object] | None = None) -> Path:
    """The recorded store as Goose keeps it: ``folder/sessions.db`` built from the dump (``change``
    run on it first)."""
    path = folder / "sessions.db"
    path.unlink(missing_ok=True)
    with closing(sqlite3.connect(path)) as db, db:
        db.executescript(DUMP.read_text(encoding="utf-8"))
        if change is not None:
            change(db)
    return path


def _traces(path: Path) -> list[Trace]:
    return [Trace(header=t.header, steps=list(t.steps())) for t in open_traces(path)]


def _content(db: sqlite3.Connection, row: int) -> list[dict]:
    return json.loads(db.execute("SELECT content_json FROM messages WHERE id = ?", (row,)).fetchone()[0])


def _set(db: sqlite3.Connection, row: int, parts: object) -> None:
    db.execute("UPDATE messages SET content_json = ? WHERE id = ?", (json.dumps(parts), row))


def test_the_recorded_session_reads_as_requests_calls_and_results(tmp_path):
    path = _store(tmp_path)
    assert detect(path)[0] == "goose"
    (trace,) = _traces(path)
    header = trace.header
    assert header.framework == "Goose" and header.task.startswith("Do these steps in order using your tools")
    assert header.metadata["model"] == "accounts/fireworks/models/deepseek-v4p1-flash"
    assert header.metadata["session_id"] == "20261002_1" and "developer" in header.metadata["extensions"]
    humans = [s.content for s in trace.steps if s.actor_kind is ActorKind.human]
    assert len(humans) == 2 and humans[1].startswith("yes. Now get issue ABC-13")
    contexts = [s for s in trace.steps if s.content.startswith("<turn-context>")]
    assert len(contexts) == 2 and {(s.actor, s.actor_kind) for s in contexts} == {("goose", ActorKind.system)}
    calls = [s for s in trace.steps if s.kind is StepKind.tool_call]
    assert [c.tool.name for c in calls] == ["shell", *["tracker__search_issues"], *["tracker__get_issue"] * 3]
    results = {s.refs.reply_to: s for s in trace.steps if s.kind is StepKind.tool_result}
    shell = results[calls[0].step_id]
    assert command_of(calls[0]) == "wc -l notes.txt" and shell.content == "       1 notes.txt"
    assert (shell.raw["status"], shell.raw["exit_code"]) == ("ok", 0)
    missing = results[calls[2].step_id]  # the tracker's answer for an issue that does not exist
    assert (missing.content, missing.raw["status"]) == ("Issue ABC-99 does not exist", "error")
    assert [s.raw.get("block") for s in trace.steps if s.actor == "agent" and s.kind is StepKind.message][
        :1
    ] == ["thinking"]
    facts = TestRunFacts(trace)
    assert facts.calls[trace.steps.index(calls[0])] == ("wc -l notes.txt", trace.steps.index(shell))
    report = run_rules_audit(trace)
    assert validate_report(report.model_dump(mode="json"), trace).ok


def test_the_shipped_store_is_the_recorded_dump_loaded(tmp_path):
    """tests/fixtures/ingest/goose_sessions.db (the README's example) holds the real dump's rows."""

    def rows(path: Path) -> dict[str, list[tuple]]:
        with closing(sqlite3.connect(path)) as db:
            tables = [t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            return {t: db.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall() for t in tables}

    assert rows(SHIPPED) == rows(_store(tmp_path))


def test_a_failed_shell_command_fails_its_result_with_its_exit_code(tmp_path):
    """A changed copy: the shell's answer says it exited 1 (Goose's ``isError`` and the
    ``structuredContent`` of a failed command)."""

    def failed(db: sqlite3.Connection) -> None:
        parts = _content(db, 4)
        value = parts[0]["toolResult"]["value"]
        value["isError"] = True
        value["structuredContent"] = {
            "exit_code": 1,
            "stderr": "wc: notes.txt: open: No such file",
            "stdout": "",
        }
        _set(db, 4, parts)

    (trace,) = _traces(_store(tmp_path, failed))
    (shell,) = [
        s for s in trace.steps if s.kind is StepKind.tool_result and s.tool and s.tool.name == "shell"
    ]
    assert (shell.raw["status"], shell.raw["exit_code"], shell.raw["error_type"]) == ("error", 1, "exit_code")


def test_each_session_is_a_trace_whose_id_stays_when_others_are_added(tmp_path):
    (alone,) = _traces(_store(tmp_path))

    def another(db: sqlite3.Connection) -> None:
        db.execute(
            "INSERT INTO sessions (id, working_dir, created_at) VALUES ('20261003_1', '/w', '2026-10-03')"
        )
        db.execute(
            "INSERT INTO messages (message_id, session_id, role, content_json, created_timestamp, metadata_json) "
            "VALUES ('m', '20261003_1', 'user', ?, 1790990000, '{}')",
            (json.dumps([{"type": "text", "text": "Count the lines of notes.txt."}]),),
        )

    first, second = _traces(_store(tmp_path, another))
    assert first.header.trace_id == alone.header.trace_id and first.steps == alone.steps
    assert (
        second.header.task == "Count the lines of notes.txt."
        and second.header.trace_id != first.header.trace_id
    )


def test_what_the_agent_never_saw_is_counted_and_parts_it_cannot_read_too(tmp_path):
    def hidden(db: sqlite3.Connection) -> None:
        db.execute(
            'UPDATE messages SET metadata_json = \'{"agentVisible":false,"userVisible":true}\' WHERE id = 12'
        )
        _set(db, 16, [{"type": "image", "data": "", "mimeType": "image/png"}, *_content(db, 16)])

    (trace,) = _traces(_store(tmp_path, hidden))
    assert not [s for s in trace.steps if s.content.startswith("yes. Now get issue")]
    skipped = trace.header.metadata["skipped_records"]
    assert skipped == {"message:not shown to the agent": 1, "part:image": 1}


def test_a_tool_request_goose_could_not_read_is_its_notice(tmp_path):
    def unreadable(db: sqlite3.Connection) -> None:
        parts = _content(db, 14)
        parts[0]["toolCall"] = {"status": "error", "error": "Could not interpret tool use parameters"}
        _set(db, 14, parts)

    (trace,) = _traces(_store(tmp_path, unreadable))
    (notice,) = [s for s in trace.steps if s.raw.get("error_type") == "invalid_tool_call"]
    assert (notice.actor, notice.content) == ("goose", "Could not interpret tool use parameters")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (
            'UPDATE messages SET content_json = \'[{"type": "text"\' WHERE id = 3',
            "messages[id=3].content_json",
        ),
        ("UPDATE messages SET content_json = '{}' WHERE id = 4", "messages[id=4]"),
        ("UPDATE messages SET content_json = '[7]' WHERE id = 5", "messages[id=5].content_json[0]"),
        (
            'UPDATE messages SET content_json = \'[{"type": "toolResponse", "id": "x"}]\' WHERE id = 6',
            "messages[id=6].content_json[0]",
        ),
        ("UPDATE messages SET metadata_json = 'yes' WHERE id = 7", "messages[id=7].metadata_json"),
    ],
)
def test_a_damaged_message_is_named_by_its_row_and_field(tmp_path, change, field):
    path = _store(tmp_path, lambda db: db.execute(change))
    with pytest.raises(InputError) as caught:
        _traces(path)
    assert caught.value.field == field and caught.value.path == str(path)


def test_another_sqlite_database_or_a_file_that_is_none_is_a_clear_error(tmp_path):
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE events (id INTEGER)")
    db.close()
    with pytest.raises(InputError):  # no importer takes it
        detect(other)
    with pytest.raises(InputError, match="not Goose's session store"):
        list(get("goose").open(other))
    text = tmp_path / "notes.txt"
    text.write_text("not a database\n" * 200)
    with pytest.raises(InputError, match="no database at all"):
        list(get("goose").open(text))


def test_every_part_mutated_imports_or_fails_with_an_input_error(tmp_path):
    """Each part of each message with a key's value of another type (or none): the import reads
    it or refuses it with the row and field, never a traceback."""
    base = SHIPPED.read_bytes()
    with closing(sqlite3.connect(SHIPPED)) as source:
        rows = [(r, json.loads(c)) for r, c in source.execute("SELECT id, content_json FROM messages")]
    path = tmp_path / "sessions.db"
    tried = 0
    for row, parts in rows:
        for k, part in enumerate(parts):
            for key in part:
                for value in (None, 7, [], "x", {}):
                    changed = json.loads(json.dumps(parts))
                    changed[k][key] = value
                    path.write_bytes(base)
                    with closing(sqlite3.connect(path)) as db, db:
                        _set(db, row, changed)
                    try:
                        _traces(path)
                    except InputError as exc:
                        assert exc.field and exc.field.startswith(f"messages[id={row}]")
                    tried += 1
    assert tried > 100

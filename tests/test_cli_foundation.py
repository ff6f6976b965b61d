"""The CLI as a user meets it: one clear line for every mistake, exit codes, nothing partial stored."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from schemas.export import EXPORTED, SCHEMA_DIR
from tests.cli_helpers import events_in, run
from tests.conftest import REPO

EXAMPLE = REPO / "examples" / "renewal_drift.jsonl"


def test_ingest_twice_appends_nothing_new_and_show_lists_steps(tmp_path):
    first = run(["ingest", str(EXAMPLE), "--json"], tmp_path)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["appended"] == 9
    again = run(["ingest", str(EXAMPLE), "--json"], tmp_path)
    assert json.loads(again.stdout) == {**json.loads(first.stdout), "appended": 0, "already_present": 9}
    shown = run(["traces", "show", "example-renewal-drift", "--json"], tmp_path)
    assert [s["step_id"] for s in json.loads(shown.stdout)["steps"]][:2] == ["s00", "s01"]
    listed = json.loads(run(["traces", "list", "--json"], tmp_path).stdout)
    assert listed[0]["steps"] == 8
    assert run(["store", "verify"], tmp_path).returncode == 0


def test_ingest_from_stdin(tmp_path):
    proc = run(["ingest", "-"], tmp_path, stdin=EXAMPLE.read_bytes())
    assert proc.returncode == 0 and "example-renewal-drift" in proc.stdout


def test_missing_trace_is_a_clear_error(tmp_path):
    proc = run(["traces", "show", "nope"], tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("error: no trace with id 'nope'")
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nosuch"], "No such command 'nosuch'"),
        (["review"], "Missing argument"),
        (["review", "--nope", str(EXAMPLE)], "No such option: --nope"),
    ],
)
def test_usage_mistakes_are_one_message_and_exit_2(tmp_path, args: list[str], message: str) -> None:
    proc = run(args, tmp_path)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def good_line(i: int) -> str:
    return json.dumps({"step_id": f"s{i}", "index": i, "actor": "a", "content": "x"})


BAD_INPUTS = {
    "malformed_json": (good_line(0) + "\n{not json}\n", "line 2", "malformed JSON"),
    "missing_field": (good_line(0) + '\n{"step_id": "s1", "index": 1}\n', "line 2", "field 'actor'"),
    "mistyped_field": (
        good_line(0) + '\n{"step_id": "s1", "index": "one", "actor": "a"}\n',
        "line 2",
        "field 'index'",
    ),
    "empty_file": ("", "", "no steps"),
    "array_line": ("[1, 2]\n", "line 1", "expected a JSON object"),
    "duplicate_id": (
        good_line(0) + "\n" + good_line(0).replace('"index": 0', '"index": 1') + "\n",
        "line 2",
        "duplicate",
    ),
    "late_header": (good_line(0) + '\n{"record": "header", "trace_id": "x"}\n', "line 2", "header"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_is_one_line_and_stores_nothing(tmp_path, case):
    text, where, what = BAD_INPUTS[case]
    bad = tmp_path / f"{case}.jsonl"
    bad.write_text(text)
    proc = run(["ingest", str(bad)], tmp_path)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert str(bad) in proc.stderr and where in proc.stderr and what in proc.stderr
    assert events_in(tmp_path) == 0


def test_binary_and_directory_and_missing(tmp_path):
    binary = tmp_path / "blob.jsonl"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    for target, message in [
        (binary, "binary"),
        (tmp_path, "directory"),
        (tmp_path / "nope.jsonl", "no such file"),
    ]:
        proc = run(["ingest", str(target)], tmp_path)
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert events_in(tmp_path) == 0


def test_huge_line_fails_without_reading_it_whole(tmp_path, monkeypatch):
    from auditor.core.errors import InputError
    from ingest import canonical

    monkeypatch.setenv("AUDITOR_MAX_DOCUMENT_MB", "0.001")  # 1,048 bytes: a line is a document
    path = tmp_path / "huge.jsonl"
    path.write_text(good_line(0) + "\n" + '{"content": "' + "x" * 5000 + '"}\n')
    with pytest.raises(InputError, match=r"line 2.*over the limit"):
        canonical.scan_canonical(path)


def test_version_and_help_import_no_heavy_dependency(tmp_path):
    assert run(["--version"], tmp_path).stdout.startswith("auditor ")
    assert "ingest" in run(["--help"], tmp_path).stdout
    heavy = "{'torch', 'transformers', 'litellm', 'langgraph', 'kafka', 'matplotlib'}"
    code = f"import sys, auditor.surfaces.cli.main; print(sorted(m for m in sys.modules if m.split('.')[0] in {heavy}))"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_store_verify_names_the_first_broken_link_of_a_tampered_store(tmp_path):
    assert run(["ingest", str(EXAMPLE)], tmp_path).returncode == 0
    db = sqlite3.connect(tmp_path / "auditor.db")
    with db:  # an attacker with DDL rights: drop the guard, then edit two events
        db.execute("DROP TRIGGER events_refuse_update")
        db.execute("UPDATE events SET payload = '{\"edited\":true}' WHERE global_position IN (3, 6)")
    db.close()
    proc = run(["store", "verify"], tmp_path)
    assert proc.returncode == 1
    assert "broken at global position 3" in proc.stdout and "edited event" in proc.stdout
    assert "2 events verified before it" in proc.stdout
    report = json.loads(run(["store", "verify", "--json"], tmp_path).stdout)
    assert report == {
        "checked": 2,
        "ok": False,
        "broken_position": 3,
        "reason": "content does not match its hash (edited event)",
    }


def test_schemas_export_writes_the_committed_schema_files(tmp_path):
    out = tmp_path / "json"
    proc = run(["schemas", "export", "--out", str(out), "--json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    written = sorted(Path(p).name for p in json.loads(proc.stdout))
    assert written == sorted(f"{name}.schema.json" for name in EXPORTED)
    for name in written:
        assert (out / name).read_text(encoding="utf-8") == (SCHEMA_DIR / name).read_text(encoding="utf-8")

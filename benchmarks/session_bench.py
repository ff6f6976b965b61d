"""How importing and reviewing a coding agent's session scales with its length.

A real session is extended by ``--cycles`` rounds of the loop a long session is made of, before its
closing report: an edit of the source file and a test run after it, failing and passing in turn,
as the harness writes them. ``--format claude-code`` (the default) extends a Claude Code transcript
(tests/fixtures/real/claude-code/pytest_edit_commit_session.jsonl): an ``Edit`` with the harness's
account of it (the patch and a copy of the file) and a ``Bash`` run. ``--format codex-exec``
extends a ``codex exec --json`` stream (tests/fixtures/real/codex-exec/fieldguide_…jsonl): a
``file_change`` item and a ``command_execution`` started and completed. ``--format cursor-agent``
extends a Cursor CLI stream-json capture (tests/fixtures/real/cursor-agent/read_then_edit_…ndjson): an
``editToolCall`` and a ``shellToolCall``, each started and completed. Prints, per length, the
file's size, the import's time (every step streamed from the file), the review's (the rules engine,
every detector) and the test timeline's (``auditor traces tests``), and the peak memory of the
process.

    python benchmarks/session_bench.py                  # 100, 1000 and 5000 cycles
    python benchmarks/session_bench.py --format codex-exec --cycles 20000
    python benchmarks/session_bench.py --format cursor-agent --cycles 1000 5000
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a clone

from auditor.audit.engine import run_rules_audit
from auditor.audit.test_timeline import timeline
from ingest import open_traces
from schemas import Trace

REAL = Path(__file__).resolve().parents[1] / "tests/fixtures/real"
SESSION = REAL / "claude-code/pytest_edit_commit_session.jsonl"
STREAM = REAL / "codex-exec/fieldguide_nvim_edit_append_mcp_blocked_write.jsonl"
CURSOR = REAL / "cursor-agent/read_then_edit_overwrite.ndjson"


def _cycle(n: int, base: dict, path: str, copy: str) -> list[dict]:
    """One edit of ``path`` and one test run, as the harness writes them (ids unique per cycle)."""
    failing = n % 2 == 0
    output = "1 failed, 1 passed in 0.01s" if failing else "2 passed in 0.01s"
    shell = (
        f"Exit code 1\nFAILED tests/test_math_utils.py::test_add - assert\n{output}" if failing else output
    )
    edit, run = f"toolu_bench_edit_{n}", f"toolu_bench_run_{n}"

    def turn(role: str, content: list, **extra: object) -> dict:
        return {
            **base,
            "type": role,
            "uuid": f"{role}-{n}-{len(content)}",
            "message": {"role": role, "content": content},
            **extra,
        }

    return [
        turn(
            "assistant",
            [
                {
                    "type": "tool_use",
                    "id": edit,
                    "name": "Edit",
                    "input": {"file_path": path, "old_string": f"x = {n}", "new_string": f"x = {n + 1}"},
                }
            ],
        ),
        turn(
            "user",
            [{"type": "tool_result", "tool_use_id": edit, "content": f"The file {path} has been updated."}],
            toolUseResult={
                "filePath": path,
                "originalFile": copy,
                "structuredPatch": [{"lines": [f"-x = {n}", f"+x = {n + 1}"]}],
            },
        ),
        turn(
            "assistant",
            [
                {
                    "type": "tool_use",
                    "id": run,
                    "name": "Bash",
                    "input": {"command": "python -m pytest tests/test_math_utils.py"},
                }
            ],
        ),
        turn("user", [{"type": "tool_result", "tool_use_id": run, "content": shell, "is_error": failing}]),
    ]


def _exec_cycle(n: int, path: str) -> list[dict]:
    """One file change and one test run as ``codex exec --json`` streams them."""
    failing = n % 2 == 0
    output = "F.\n1 failed, 1 passed in 0.01s\n" if failing else "..\n2 passed in 0.01s\n"
    change = {"id": f"item_e{n}", "type": "file_change", "changes": [{"path": path, "kind": "update"}]}
    run = {"id": f"item_r{n}", "type": "command_execution", "command": "/bin/zsh -lc 'pytest -q'"}
    return [
        {"type": "item.started", "item": {**change, "status": "in_progress"}},
        {"type": "item.completed", "item": {**change, "status": "completed"}},
        {
            "type": "item.started",
            "item": {**run, "aggregated_output": "", "exit_code": None, "status": "in_progress"},
        },
        {
            "type": "item.completed",
            "item": {
                **run,
                "aggregated_output": output,
                "exit_code": int(failing),
                "status": "failed" if failing else "completed",
            },
        },
    ]


def _cursor_cycle(n: int, path: str, session: str) -> list[dict]:
    """One edit and one test run as the Cursor CLI streams them: each call started, then completed."""
    failing = n % 2 == 0
    output = "F.\n1 failed, 1 passed in 0.01s\n" if failing else "..\n2 passed in 0.01s\n"
    edit = {"path": path, "streamContent": f"x = {n}\n"}
    diff = f"-x = {n - 1}\n+x = {n}\n"
    run = {"command": "pytest -q", "exitCode": int(failing), "stdout": output, "interleavedOutput": output}

    def event(kind: str, call: str, tool: dict) -> dict:
        return {
            "type": "tool_call",
            "subtype": kind,
            "call_id": f"{call}_{n}",
            "tool_call": tool,
            "session_id": session,
        }

    return [
        event("started", "edit", {"editToolCall": {"args": edit}}),
        event(
            "completed",
            "edit",
            {"editToolCall": {"args": edit, "result": {"success": {"path": path, "diffString": diff}}}},
        ),
        event("started", "run", {"shellToolCall": {"args": {"command": "pytest -q"}}}),
        event("completed", "run", {"shellToolCall": {"result": {"failure" if failing else "success": run}}}),
    ]


def extended_cursor(cycles: int, folder: Path) -> Path:
    lines = [json.loads(line) for line in CURSOR.read_text(encoding="utf-8").splitlines() if line.strip()]
    session = lines[0]["session_id"]
    added = [
        e
        for n in range(cycles)
        for e in _cursor_cycle(n, "/Users/boice/Documents/GitHub/toad-ts/calc.py", session)
    ]
    out = folder / f"cursor-{cycles}.jsonl"
    out.write_text("".join(json.dumps(e) + "\n" for e in [*lines[:6], *added, *lines[6:]]), encoding="utf-8")
    return out


def extended_stream(cycles: int, folder: Path) -> Path:
    lines = [json.loads(line) for line in STREAM.read_text(encoding="utf-8").splitlines() if line.strip()]
    end = next(i for i, e in enumerate(lines) if e["type"] == "turn.completed") - 1  # before the report
    added = [e for n in range(cycles) for e in _exec_cycle(n, "/lab/cfg/lua/calc.py")]
    out = folder / f"stream-{cycles}.jsonl"
    out.write_text(
        "".join(json.dumps(e) + "\n" for e in [*lines[:end], *added, *lines[end:]]), encoding="utf-8"
    )
    return out


def extended(cycles: int, folder: Path) -> Path:
    lines = [json.loads(line) for line in SESSION.read_text(encoding="utf-8").splitlines() if line.strip()]
    base = {k: lines[1][k] for k in ("sessionId", "cwd", "version")}
    path = f"{base['cwd']}/src/math_utils.py"
    copy = "def add(a, b):\n    return a + b\n" * 200  # the file copy the harness writes beside every edit
    added = [r for n in range(cycles) for r in _cycle(n, base, path, copy)]
    out = folder / f"session-{cycles}.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in [*lines[:-1], *added, lines[-1]]), encoding="utf-8")
    return out


BUILDERS = {"claude-code": extended, "codex-exec": extended_stream, "cursor-agent": extended_cursor}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, nargs="*", default=[100, 1000, 5000])
    parser.add_argument("--format", choices=list(BUILDERS), default="claude-code")
    args = parser.parse_args()
    build = BUILDERS[args.format]
    print(
        f"{'cycles':>7} {'steps':>7} {'MB':>7} {'import s':>9} {'review s':>9} {'timeline s':>11} {'peak MB':>8}"
    )
    with tempfile.TemporaryDirectory() as folder:
        for cycles in args.cycles:
            path = build(cycles, Path(folder))
            start = time.perf_counter()
            imported = next(open_traces(path, args.format))
            trace = Trace(header=imported.header, steps=list(imported.steps()))
            read = time.perf_counter() - start
            start = time.perf_counter()
            run_rules_audit(trace)
            review = time.perf_counter() - start
            start = time.perf_counter()
            timeline(trace)
            laid = time.perf_counter() - start
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            size = path.stat().st_size / 1e6
            print(
                f"{cycles:>7} {len(trace.steps):>7} {size:>7.1f} {read:>9.2f} {review:>9.2f} {laid:>11.2f} {peak:>8.0f}"
            )


if __name__ == "__main__":
    main()

"""Candidate ranking signals for coding runs, each measured on the development repositories and on
those kept apart: what a trajectory or its diff shows, scored alone by AUROC against SWE-bench's
verdict (unresolved = positive; ties count one half).

    python benchmarks/coding_signals.py ../shared/data/swebench [--held-out matplotlib,pytest-dev] [--json]

Issue 29 asks ``risk_score`` to rank unresolved runs above resolved ones on both parts. The
signals here were tried for it and none separates on both (stops 49 to 54); the script keeps
that measurement repeatable instead of in session notes, and is where the next candidate goes.
A signal that holds on the development part only is not a mechanism.
"""

from __future__ import annotations

import argparse
import csv
import difflib
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a clone

from auditor.audit.detectors.test_runs import TestRun, TestRunFacts, exit_code, is_test_file, printed_text
from ingest import open_traces
from schemas import Trace
from scoring.stats.auroc import auroc

_ADDED = re.compile(r"^\+(?!\+\+)(.*)$", re.M)
_REMOVED = re.compile(r"^-(?!--)(.*)$", re.M)
_FILE = re.compile(r"^\+\+\+ b/(\S+)$", re.M)
_EXCEPTION = re.compile(r"\b[A-Z][A-Za-z]*(?:Error|Exception)\b")
_FRAME = re.compile(r'File "([^"]+\.py)", line \d+')
_SPACE = re.compile(r"\s+")
_STRING = re.compile(r"""(['"])([^'"\n]{3,})\1""")
_NUMBER = re.compile(r"(?<![\w.])(\d+\.\d+|\d{2,})(?![\w.])")
_BLOCK = re.compile(r"```[^\n]*\n(.*?)```", re.S)
_ALIKE = 0.8  # difflib ratio of a wanted line to the reported one it stands beside
SEPARATES = 0.6  # a signal worth combining into risk_score separates above this on both parts


def _source_lines(diff: str) -> list[str]:
    """The added lines of the diff's non-test files."""
    out, source = [], False
    for line in diff.splitlines():
        if line.startswith("+++ "):
            source = not is_test_file(line[6:])
        elif source and line.startswith("+"):
            out.append(line[1:])
    return out


def _count(pattern: str) -> Callable[[list[str]], int]:
    rx = re.compile(pattern)
    return lambda lines: sum(bool(rx.match(line)) for line in lines)


def _before_fix(f: TestRunFacts) -> list[TestRun]:
    first = f.source_edits[0].pos if f.source_edits else len(f.steps)
    return [r for r in f.runs if r.call < first]


def _after_fix(f: TestRunFacts) -> list[TestRun]:
    return [r for r in f.runs if f.source_edits and r.call > f.source_edits[-1].pos]


def _request_error_after(tr: Trace, f: TestRunFacts, req: str) -> float:
    """An exception the request names is printed by a run after the last edit."""
    named = set(_EXCEPTION.findall(req))
    return float(any(n in printed_text(tr.steps[r.result]) for r in _after_fix(f) for n in named))


def _module_tests_after(f: TestRunFacts, diff: str) -> float:
    """The share of changed modules whose name no test run after the last edit names."""
    modules = [
        p.rsplit("/", 1)[-1][:-3] for p in _FILE.findall(diff) if p.endswith(".py") and not is_test_file(p)
    ]
    runs = [r.command for r in _after_fix(f) if r.is_test]
    return sum(not any(m in c for c in runs) for m in modules) / len(modules) if modules else 0.5


def _misses_traceback(diff: str, req: str) -> float:
    """The diff changes none of the files the request's traceback passes through."""
    frames = _FRAME.findall(req)
    if not frames:
        return 0.5
    return float(not any(frame.endswith(p) for frame in frames for p in _FILE.findall(diff)))


def _reproduction_frames(f: TestRunFacts) -> list[list[str]]:
    """The project files each of the agent's checks that failed on the original code ran through
    (its traceback's frames, installed packages left out), one list a run."""
    return [
        [p for p in _FRAME.findall(printed_text(f.steps[r.result])) if "site-packages" not in p]
        for r in f.runs
        if f.on_original_code(r) and not r.ok and not r.is_test
    ]


def _misses_reproduction(diff: str, f: TestRunFacts) -> float:
    """The diff changes none of the files the agent's own failing reproductions ran through."""
    frames = [p for run in _reproduction_frames(f) for p in run]
    if not frames:
        return 0.5
    return float(not any(frame.endswith(p) for frame in frames for p in _FILE.findall(diff)))


def _deepest_frame_unchanged(diff: str, f: TestRunFacts) -> float:
    """The last failing reproduction's deepest frame is in a file the diff does not change."""
    runs = [run for run in _reproduction_frames(f) if run]
    if not runs:
        return 0.5
    return float(not any(runs[-1][-1].endswith(p) for p in _FILE.findall(diff)))


def _last_checks(f: TestRunFacts) -> list[TestRun]:
    """Each of the agent's own checks (scripts) at its last run, when that came after the last edit."""
    last_edit = f.source_edits[-1].pos if f.source_edits else len(f.steps)
    last: dict[str, TestRun] = {}
    for run in f.runs:
        if not run.is_test and run.call not in f.editing:
            last[run.key] = run
    return [r for r in last.values() if r.call > last_edit]


def _output_lines(f: TestRunFacts, run: TestRun) -> list[str]:
    return [
        ln.strip() for ln in printed_text(f.steps[run.result]).splitlines() if len(_SPACE.sub("", ln)) >= 6
    ]


def _no_output_changed(f: TestRunFacts) -> float:
    """No script that ran on both codes printed on the change anything its original runs had not."""
    pairs = [(b, a) for b, a in f.checks.values() if not b[0].is_test]
    if not pairs:
        return 0.5
    return float(
        all(
            printed_text(f.steps[a[-1].result]) in {printed_text(f.steps[r.result]) for r in b}
            for b, a in pairs
        )
    )


def _quoted_line_persists(f: TestRunFacts, req: str) -> float:
    """A line the request quotes that a script printed on the original code, printed again by its
    last run on the change."""
    quoted = _SPACE.sub("", req)
    for before, after in f.checks.values():
        reported = {ln for r in before for ln in _output_lines(f, r) if _SPACE.sub("", ln) in quoted}
        if reported & set(_output_lines(f, after[-1])):
            return 1.0
    return 0.0


def _own_check_through_change(f: TestRunFacts) -> float:
    """A script's last run after the last edit failed with a traceback through a changed file."""
    return float(
        any(
            not r.ok
            and any(
                p.removeprefix("/testbed/") in f.changed
                for p in _FRAME.findall(printed_text(f.steps[r.result]))
            )
            for r in _last_checks(f)
        )
    )


def _request_literal_added(diff: str, req: str) -> float:
    """An added source line holds a string (3+ characters) or number (2+ digits) the request holds."""
    literals = {m.group(2) for line in _source_lines(diff) for m in _STRING.finditer(line)}
    literals |= {m.group(1) for line in _source_lines(diff) for m in _NUMBER.finditer(line)}
    return float(any(lit in req for lit in literals))


def _narrowed_after(f: TestRunFacts) -> float:
    """Every run of the project's tests on the change after its last edit picked tests (-k, ids)."""
    if not f.source_edits:
        return 0.5
    after = [r for r in f.project_runs if r.call > f.source_edits[-1].pos and not f.on_original_code(r)]
    return float(bool(after) and all(r.selection for r in after))


def _expected_never_printed(f: TestRunFacts, req: str) -> float:
    """A line of the request's code blocks that the original code never printed but that resembles
    one it did (the wanted output beside the reported one), printed by no run after the last edit."""
    if not f.source_edits:
        return 0.5
    first, last = f.source_edits[0].pos, f.source_edits[-1].pos
    before = {
        _SPACE.sub("", ln)
        for r in f.runs
        if r.call < first or f.on_original_code(r)
        for ln in _output_lines(f, r)
    }
    after = "\n".join(_SPACE.sub("", ln) for r in f.runs if r.call > last for ln in _output_lines(f, r))
    quoted = {_SPACE.sub("", ln) for block in _BLOCK.findall(req) for ln in block.splitlines()}
    wanted = [
        q
        for q in quoted
        if len(q) >= 6
        and q not in before
        and any(difflib.SequenceMatcher(None, q, b).ratio() >= _ALIKE for b in before)
    ]
    return float(bool(wanted) and not any(q in after for q in wanted))


Signal = Callable[[Trace, TestRunFacts, str, str], float]

SIGNALS: dict[str, Signal] = {
    # the trajectory
    "steps": lambda tr, f, diff, req: len(tr.steps),
    "commands": lambda tr, f, diff, req: len(f.calls),
    "runs": lambda tr, f, diff, req: len(f.runs),
    "failed run share": lambda tr, f, diff, req: sum(not r.ok for r in f.runs) / max(1, len(f.runs)),
    "last run failed": lambda tr, f, diff, req: float(bool(f.runs) and not f.runs[-1].ok),
    "project test runs": lambda tr, f, diff, req: len(f.project_runs),
    "source edits": lambda tr, f, diff, req: len(f.source_edits),
    "runs after the last edit": lambda tr, f, diff, req: sum(
        1 for r in f.runs if f.source_edits and r.call > f.source_edits[-1].pos
    ),
    "reverts": lambda tr, f, diff, req: len(f.reverts),
    "no failing run before the fix": lambda tr, f, diff, req: float(
        not any(not r.ok for r in _before_fix(f))
    ),
    "request's error printed after the fix": lambda tr, f, diff, req: _request_error_after(tr, f, req),
    "changed modules no test run names after": lambda tr, f, diff, req: _module_tests_after(f, diff),
    "fix misses the request's traceback": lambda tr, f, diff, req: _misses_traceback(diff, req),
    "fix misses the reproduction's traceback": lambda tr, f, diff, req: _misses_reproduction(diff, f),
    "the reproduction's deepest frame unchanged": lambda tr, f, diff, req: _deepest_frame_unchanged(diff, f),
    "a check's last run after the last edit failed": lambda tr, f, diff, req: float(
        any(not r.ok for r in _last_checks(f))
    ),
    "a check's last run failed through a changed file": lambda tr, f, diff, req: _own_check_through_change(f),
    "no check printed anything new on the change": lambda tr, f, diff, req: _no_output_changed(f),
    "a line the request quotes printed again after the fix": lambda tr, f, diff, req: _quoted_line_persists(
        f, req
    ),
    "never reproduced (failed or printed the request's error)": lambda tr, f, diff, req: float(
        not any(f.reproduces(r) for r in f.runs)
    ),
    "never shown fixed": lambda tr, f, diff, req: float(f.shown_fixed is None),
    "only narrowed test runs after the last edit": lambda tr, f, diff, req: _narrowed_after(f),
    "any failed command": lambda tr, f, diff, req: float(
        any(r is not None and exit_code(tr.steps[r]) not in (None, 0) for _, r in f.calls.values())
    ),
    # the diff
    "diff files": lambda tr, f, diff, req: len(_FILE.findall(diff)),
    "test files in the diff": lambda tr, f, diff, req: sum(is_test_file(p) for p in _FILE.findall(diff)),
    "lines added": lambda tr, f, diff, req: len(_ADDED.findall(diff)),
    "lines removed": lambda tr, f, diff, req: len(_REMOVED.findall(diff)),
    "try/except added": lambda tr, f, diff, req: _count(r"\s*(try:|except\b)")(_source_lines(diff)),
    "isinstance/hasattr added": lambda tr, f, diff, req: sum(
        len(re.findall(r"\b(hasattr|getattr|isinstance)\(", line)) for line in _source_lines(diff)
    ),
    "conditions added": lambda tr, f, diff, req: _count(r"\s*(if|elif)\b")(_source_lines(diff)),
    "comments added": lambda tr, f, diff, req: _count(r"\s*#")(_source_lines(diff)),
    "functions added": lambda tr, f, diff, req: _count(r"\s*def\b")(_source_lines(diff)),
    "a literal of the request added to the code": lambda tr, f, diff, req: _request_literal_added(diff, req),
    # the request
    "a line the request wants printed by no run after the fix": lambda tr, f, diff, req: (
        _expected_never_printed(f, req)
    ),
    "request length": lambda tr, f, diff, req: len(req),
    "request code blocks": lambda tr, f, diff, req: req.count("```") // 2,
    "request traceback": lambda tr, f, diff, req: float("Traceback" in req),
}


def measure(root: Path) -> list[dict]:
    """Every run's signals, repository and verdict."""
    with (root / "outcomes.csv").open(newline="") as fh:
        table = {row["file"]: row for row in csv.DictReader(fh)}
    rows = []
    for name, row in sorted(table.items()):
        path = root / "runs" / name
        if not path.exists():
            continue
        imported = next(iter(open_traces(path)))
        trace = Trace(header=imported.header, steps=list(imported.steps()))
        facts = TestRunFacts(trace)
        request = next((s.content for s in trace.steps if s.actor_kind.value == "human"), "")
        diff = facts.submission or ""
        values = {k: float(signal(trace, facts, diff, request)) for k, signal in SIGNALS.items()}
        unresolved = row["resolved"].strip().lower() in ("false", "0", "no")
        rows.append({"file": name, "repo": row["repo"], "unresolved": unresolved, "signals": values})
    return rows


def table(rows: list[dict], held_out: frozenset[str]) -> dict[str, dict[str, float]]:
    """Each signal's AUROC on the development part, the part kept apart, and all runs."""
    parts = {
        "development": [r for r in rows if r["repo"] not in held_out],
        "held out": [r for r in rows if r["repo"] in held_out],
        "all": rows,
    }
    out = {}
    for signal in SIGNALS:
        out[signal] = {
            part: auroc(
                [r["signals"][signal] for r in runs if r["unresolved"]],
                [r["signals"][signal] for r in runs if not r["unresolved"]],
            )
            for part, runs in parts.items()
        }
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", type=Path, help="the SWE-bench folder (runs/ and outcomes.csv)")
    ap.add_argument("--held-out", default="matplotlib,pytest-dev", help="repositories kept apart")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if not (args.root / "outcomes.csv").exists():
        ap.error(f"{args.root}: no outcomes.csv (give the SWE-bench folder)")
    held_out = frozenset(g.strip() for g in args.held_out.split(",") if g.strip())
    rows = measure(args.root)
    unknown = held_out - {r["repo"] for r in rows}
    if unknown:
        ap.error(f"--held-out names no repository of {args.root}: {', '.join(sorted(unknown))}")
    result = table(rows, held_out)
    if args.json:
        json.dump({"runs": len(rows), "held_out": sorted(held_out), "auroc": result}, sys.stdout, indent=2)
        print()
        return 0
    print(f"{len(rows)} runs; kept apart: {', '.join(sorted(held_out))}; AUROC, unresolved vs resolved")
    width = max(map(len, SIGNALS))
    print(f"{'signal':{width}} {'dev':>6} {'held':>6} {'all':>6}  both > {SEPARATES}?")
    for signal, parts in result.items():
        both = parts["development"] > SEPARATES and parts["held out"] > SEPARATES
        print(
            f"{signal:{width}} {parts['development']:6.3f} {parts['held out']:6.3f} {parts['all']:6.3f}"
            f"  {'yes' if both else 'no'}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

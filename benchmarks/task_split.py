"""Development discipline for the outcome benchmarks: a fixed split of runs into two halves by
task, the calibration error of a score, and τ-bench labels corrected by τ²-bench.

A rule built on some runs of a task and measured on other runs of the same task measures
memory, not method: the split is by task (every trial of a task falls in the same half), by a
hash of the task's name, so it is the same on every machine and every day. τ-bench's airline
tasks were written before τ²-bench corrected those whose expected actions break the policy; a
run that τ-bench rewards for doing what the corrected task forbids is counted failed.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from auditor.audit.detectors.policy_facts import result_failed
from schemas import StepKind, Trace

_TRIAL = re.compile(r"[-_]trial\d+$", re.IGNORECASE)
_USER_ID = re.compile(r"\b[a-z]+_[a-z]+_\d{3,}\b")
_WORD = re.compile(r"[a-z0-9]+")
_CODE = re.compile(r"\b(?=[A-Z0-9]*\d)(?=[A-Z0-9]*[A-Z])[A-Z0-9]{6}\b")  # a record id: 6 capitals and digits


def task_of(name: str) -> str:
    """The task a run belongs to: its file name without the trial suffix and the extension
    (``airline-task041-trial0.json`` -> ``airline-task041``); a run with no trial suffix is its
    own task (a Who&When case)."""
    stem = Path(name).name.split(".")[0]
    parent = Path(name).parent.name
    base = _TRIAL.sub("", stem)
    return f"{parent}/{base}" if parent and base == stem else base


def half(task: str) -> str:
    """``A`` or ``B``, from the first byte of the task name's SHA-256: fixed, and blind to what
    the runs contain."""
    return "AB"[hashlib.sha256(task.encode()).digest()[0] & 1]


def ece(confidences: list[float], correct: list[bool], bins: int = 10) -> float:
    """Expected calibration error: the run-weighted mean |accuracy - mean confidence| over equal-
    width confidence bins (a confidence of 1.0 falls in the top bin)."""
    if not confidences:
        return float("nan")
    cells: dict[int, list[tuple[float, bool]]] = {}
    for c, ok in zip(confidences, correct, strict=True):
        cells.setdefault(min(int(c * bins), bins - 1), []).append((c, ok))
    n = len(confidences)
    return sum(
        len(cell) / n * abs(sum(ok for _, ok in cell) / len(cell) - sum(c for c, _ in cell) / len(cell))
        for cell in cells.values()
    )


def effective_writes(trace: Trace, writes: set[str]) -> set[tuple[str, str]]:
    """(tool, reservation or user id) of each write call whose result is not an error."""
    failed = {
        (s.refs.call_id if s.refs else None) or (s.tool.call_id if s.tool else None)
        for s in trace.steps
        if s.kind is StepKind.tool_result and result_failed(s)
    }
    out = set()
    for s in trace.steps:
        if s.kind is StepKind.tool_call and s.tool and s.tool.name in writes and s.tool.call_id not in failed:
            args = s.tool.arguments if isinstance(s.tool.arguments, dict) else {}
            out.add((s.tool.name, str(args.get("reservation_id", ""))))
    return out


def _customer_text(trace: Trace) -> str:
    parts = [s.content for s in trace.steps if s.actor_kind.value == "human"]
    parts += [json.dumps(s.tool.arguments) for s in trace.steps if s.tool and s.tool.arguments]
    return " ".join(parts)


class Tau2Tasks:
    """τ²-bench's airline tasks, matched to τ-bench runs by the customer's user id and by the words
    the customer used that the task's instructions share (weighted by rarity among the tasks)."""

    def __init__(self, path: Path) -> None:
        file = path / "tasks.json" if path.is_dir() else path
        self.tasks: list[dict[str, Any]] = json.loads(file.read_text())
        self._raw = {t["id"]: json.dumps(t["user_scenario"]) for t in self.tasks}
        self._text = {k: v.lower() for k, v in self._raw.items()}
        self._words = {k: set(_WORD.findall(v)) for k, v in self._text.items()}
        self._df = Counter(w for ws in self._words.values() for w in ws)

    def match(self, traces: Iterable[Trace]) -> dict[str, Any] | None:
        """The τ²-bench task the runs of one τ-bench task play, or None when no user id matches:
        among the tasks of the customer's user id, the one whose instructions name most of the
        record ids the customer named, then the most of their words (rarity-weighted, over the
        instructions' own weight, so a long task does not win by length)."""
        text = " ".join(_customer_text(t) for t in traces)
        users = set(_USER_ID.findall(text))
        codes = set(_CODE.findall(text))
        words = set(_WORD.findall(text.lower()))
        candidates = [t for t in self.tasks if any(u in self._text[t["id"]] for u in users)]
        if not candidates:
            return None
        n = len(self.tasks)

        def score(task: dict[str, Any]) -> tuple[int, float]:
            own = self._words[task["id"]]
            weight = sum(math.log(n / self._df[w]) for w in own) or 1.0
            shared = sum(math.log(n / self._df[w]) for w in words & own)
            return len(codes & set(_CODE.findall(self._raw[task["id"]]))), shared / math.sqrt(weight)

        return max(candidates, key=score)

    @staticmethod
    def gold_writes(task: dict[str, Any], writes: set[str]) -> set[tuple[str, str]]:
        actions = task.get("evaluation_criteria", {}).get("actions") or []
        return {
            (a["name"], str(a.get("arguments", {}).get("reservation_id", "")))
            for a in actions
            if a["name"] in writes
        }


def corrected_tasks(tau2: Path, runs: dict[str, list[tuple[Trace, str]]], writes: set[str]) -> dict[str, str]:
    """{τ-bench task: τ²-bench task id} for the tasks τ²-bench corrected: a run τ-bench rewarded
    (its end state is τ-bench's expected one) made other writes than τ²-bench's expected actions.
    A task no run of which succeeded cannot be told apart, and all its runs count failed anyway."""
    catalogue = Tau2Tasks(tau2)
    out = {}
    for task, items in runs.items():
        matched = catalogue.match(t for t, _ in items)
        if matched is None:
            continue
        gold = catalogue.gold_writes(matched, writes)
        if any(effective_writes(t, writes) != gold for t, outcome in items if outcome == "succeeded"):
            out[task] = str(matched["id"])
    return out

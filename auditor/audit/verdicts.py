"""Recorded verdicts: the pass or fail a harness gave each run (SWE-bench's resolved instances, a
CSV of outcomes), joined to the files of a triage by name, and how well the review's ranking
agrees with them.

A platform team asks this before it trusts the review on its own runs: of the runs the harness
failed, how many did a detector flag, and how many of those it passed? The verdict is a label
the review must not read to answer that. A known failure still gets its decisive step (as
``review --outcome failed`` does), but the agreement counts only the detectors' own findings and
``risk_score``, which the incident layer computes before it reads any outcome.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from auditor.core.errors import InputError
from schemas.failure import OutcomeValue
from scoring.stats.auroc import auroc_interval
from scoring.stats.wilson import Rate, wilson_rate

NAME_COLUMNS = ("file", "run", "instance_id")  # the first present names each row's run
TASK_COLUMNS = ("task_id", "task")  # runs of one task share its difficulty: the interval's unit
_OUTCOMES = {"failed": OutcomeValue.failed, "succeeded": OutcomeValue.succeeded, "unknown": None}
_RESOLVED = {"true": OutcomeValue.succeeded, "1": OutcomeValue.succeeded}
_RESOLVED |= {"false": OutcomeValue.failed, "0": OutcomeValue.failed}
# SWE-bench's harness report (swebench/harness/reporting.py, schema_version 2): an instance with an
# empty patch or an evaluation error is not resolved, as the leaderboard counts it; an incomplete
# one has no verdict.
_REPORT_PASSED = ("resolved_ids",)
_REPORT_FAILED = ("unresolved_ids", "empty_patch_ids", "error_ids")
_HINT = (
    "give a CSV with a file, run or instance_id column and an outcome (failed|succeeded) or "
    "resolved (true|false) column, SWE-bench's report JSON (resolved_ids, unresolved_ids), or "
    "the bash-only leaderboard's per_instance_details.json ({id: {resolved: true|false}})"
)
RESAMPLES = 2_000  # the AUROC interval's


@dataclass(frozen=True)
class Verdicts:
    """Each named run's verdict (failed or succeeded; an unknown one is left out), read from
    ``source``; ``tasks``: each run's task, where the file has a task column (``task_column``);
    ``groups``: each run's value of the column asked to group by (a repository, a suite)."""

    source: str
    by_name: Mapping[str, OutcomeValue]
    tasks: Mapping[str, str] = field(default_factory=dict)
    task_column: str | None = None
    groups: Mapping[str, str] = field(default_factory=dict)

    def lookup(self, label: str) -> tuple[str, OutcomeValue] | None:
        """The name and verdict for a file of the folder (``label``: its path below the folder):
        the path itself, else its file name, else that name without its extensions one by one
        (``x.traj.json``, ``x.traj``, ``x``), the most specific first."""
        path = PurePosixPath(label.replace("\\", "/"))
        names = [label, path.name]
        stem = path.name
        while "." in stem.strip("."):
            stem = stem.rsplit(".", 1)[0]
            names.append(stem)
        return next(((n, self.by_name[n]) for n in names if n in self.by_name), None)

    def matching(self, labels: Iterable[str]) -> dict[str, tuple[str, OutcomeValue]]:
        """The files (by label) a verdict names, each with that name and verdict."""
        return {label: found for label in labels if (found := self.lookup(label))}

    def of_group(self, group: str) -> Verdicts:
        """The verdicts of the runs in one group, as a file of their own would give them."""
        names = {n for n, g in self.groups.items() if g == group}
        return replace(
            self,
            by_name={n: v for n, v in self.by_name.items() if n in names},
            tasks={n: t for n, t in self.tasks.items() if n in names},
            groups={n: group for n in names},
        )


def load_verdicts(path: Path, group_by: str | None = None) -> Verdicts:
    """Read a verdicts file: SWE-bench's report JSON, a leaderboard's per-instance details, or a
    CSV (``group_by``: one of its columns, whose value groups the runs). A bad file is refused whole with its line and column, so no
    run is reviewed against half a file."""
    where = str(path)
    if not path.is_file():
        raise InputError("no such verdicts file", path=where, hint=_HINT)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", path=where, hint=_HINT) from exc
    if text.lstrip().startswith(("{", "[")):
        if group_by is not None:
            raise InputError(
                "a JSON verdicts file has no columns to group by", path=where, field="--group-by"
            )
        return Verdicts(where, _from_json(text, where))
    return _from_csv(text, where, group_by)


def _from_json(text: str, where: str) -> dict[str, OutcomeValue]:
    """SWE-bench's harness report, or the bash-only leaderboard's per-instance details (mini-SWE-
    agent's submissions: each instance id with its ``resolved`` boolean, beside cost and calls)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not JSON: {exc.msg}", path=where, line=exc.lineno, hint=_HINT) from exc
    if isinstance(data, dict) and all(k in data for k in ("resolved_ids", "unresolved_ids")):
        return _from_report(data, where)
    if (
        isinstance(data, dict)
        and data
        and all(isinstance(v, dict) and "resolved" in v for v in data.values())
    ):
        return _from_details(data, where)
    if isinstance(data, dict) and isinstance(data.get("resolved"), list):
        raise InputError(
            "lists only the resolved instances (SWE-bench experiments' results.json): which runs "
            "were not resolved is not in it",
            path=where,
            hint=_HINT,
        )
    raise InputError(
        "JSON that is neither a SWE-bench report nor per-instance details", path=where, hint=_HINT
    )


def _from_details(data: dict, where: str) -> dict[str, OutcomeValue]:
    out = {}
    for name, details in data.items():
        if not isinstance(details["resolved"], bool) or not name:
            raise InputError(
                "must be true or false, under an instance id", path=where, field=f"{name}.resolved"
            )
        out[name] = OutcomeValue.succeeded if details["resolved"] else OutcomeValue.failed
    return out


def _from_report(data: dict, where: str) -> dict[str, OutcomeValue]:
    out: dict[str, OutcomeValue] = {}
    said: dict[str, str] = {}
    for key, verdict in [(k, OutcomeValue.succeeded) for k in _REPORT_PASSED] + [
        (k, OutcomeValue.failed) for k in _REPORT_FAILED
    ]:
        ids = data.get(key, [])
        if not isinstance(ids, list) or not all(isinstance(i, str) and i for i in ids):
            raise InputError("must be a list of instance ids", path=where, field=key)
        for name in ids:
            if out.get(name, verdict) is not verdict:
                raise InputError(f"'{name}' is also in {said[name]}", path=where, field=key)
            out[name], said[name] = verdict, key
    return out


def _from_csv(text: str, where: str, group_by: str | None) -> Verdicts:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        columns = [c.strip() for c in reader.fieldnames or []]
    except csv.Error as exc:
        raise InputError(f"not CSV: {exc}", path=where, line=1, hint=_HINT) from exc
    reader.fieldnames = columns
    name_column = next((c for c in NAME_COLUMNS if c in columns), None)
    outcome_column = next((c for c in ("outcome", "resolved") if c in columns), None)
    if name_column is None or outcome_column is None:
        missing = "a run's name" if name_column is None else "a verdict"
        raise InputError(
            f"no column for {missing} (columns: {', '.join(columns) or 'none'})",
            path=where,
            line=1,
            hint=_HINT,
        )
    if group_by is not None and group_by not in columns:
        raise InputError(
            f"no column '{group_by}' to group by (columns: {', '.join(columns)})", path=where, line=1
        )
    task_column = next((c for c in TASK_COLUMNS if c in columns), None)
    values = _OUTCOMES if outcome_column == "outcome" else _RESOLVED
    out: dict[str, OutcomeValue] = {}
    tasks: dict[str, str] = {}
    groups: dict[str, str] = {}
    first: dict[str, int] = {}
    for line, row in _rows(reader, where):
        name = (row.get(name_column) or "").strip()
        raw = (row.get(outcome_column) or "").strip()
        if not name:
            raise InputError("a verdict names no run", path=where, line=line, field=name_column)
        if raw.lower() not in values:
            accepted = "|".join(values)
            raise InputError(f"'{raw}' is not one of {accepted}", path=where, line=line, field=outcome_column)
        verdict = values[raw.lower()]
        if verdict is None:
            continue
        if out.get(name, verdict) is not verdict:
            raise InputError(
                f"'{name}' has another verdict on line {first[name]}",
                path=where,
                line=line,
                field=outcome_column,
            )
        out[name] = verdict
        first.setdefault(name, line)
        if task_column is not None and (task := (row.get(task_column) or "").strip()):
            tasks[name] = task
        if group_by is not None:
            groups[name] = (row.get(group_by) or "").strip() or "(none)"
    return Verdicts(where, out, tasks, task_column if tasks else None, groups)


def _rows(reader: csv.DictReader, where: str) -> Iterator[tuple[int, dict]]:
    """Each row with the line it ends on; a line the csv module cannot read (a field past its
    size limit) is an InputError on that line."""
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise InputError(
                f"not CSV: {exc}", path=where, line=reader.line_num + 1, hint=_HINT
            ) from exc  # the line it failed on is not counted yet
        yield reader.line_num, row


@dataclass(frozen=True)
class Agreement:
    """How the review's ranking agrees with the verdicts: the failed and the succeeded runs a
    detector flagged, and the AUROC of ``risk_score`` (failed above succeeded, ties one half) with
    a 95% interval that resamples ``resampled`` (the verdicts' task column, else runs: a run
    without a task is its own). ``without_verdict``: runs whose file no verdict names;
    ``unmatched``: names that match no file of the folder; ``failed_risk`` and ``succeeded_risk``:
    the scores the AUROC compares (the ROC curve's)."""

    source: str
    failed_flagged: Rate | None
    succeeded_flagged: Rate | None
    auroc: float | None
    interval: tuple[float, float] | None
    resampled: str = "runs"
    without_verdict: list[str] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)
    failed_risk: tuple[float, ...] = ()
    succeeded_risk: tuple[float, ...] = ()

    def as_dict(self) -> dict:
        def rate(r: Rate | None) -> dict | None:
            return (
                None if r is None else {"flagged": r.successes, "runs": r.total, "low": r.low, "high": r.high}
            )

        return {
            "source": self.source,
            "failed_runs_flagged": rate(self.failed_flagged),
            "succeeded_runs_flagged": rate(self.succeeded_flagged),
            "auroc_risk_score": self.auroc,
            "auroc_interval": list(self.interval) if self.interval else None,
            "auroc_interval_resamples": self.resampled,
            "runs_without_verdict": self.without_verdict,
            "verdicts_naming_no_run": self.unmatched,
        }


def agreement(verdicts: Verdicts, rows: Iterable, labels: Iterable[str]) -> Agreement:
    """The agreement over the reviewed ``rows`` (``auditor.audit.triage.RunRow``: ``file``,
    ``flagged``, ``risk_score``) whose file a verdict names; ``labels`` are every file of the
    folder, to tell which names matched none."""
    matched = verdicts.matching(labels)
    used = {name for name, _ in matched.values()}
    judged = [(r, matched[r.file][1]) for r in rows if r.file in matched]
    failed = [r for r, v in judged if v is OutcomeValue.failed]
    passed = [r for r, v in judged if v is OutcomeValue.succeeded]
    ci = auroc_interval(
        [r.risk_score for r, _ in judged],
        [v is OutcomeValue.failed for _, v in judged],
        [verdicts.tasks.get(matched[r.file][0], r.file) for r, _ in judged],
        n_resamples=RESAMPLES,
    )
    return Agreement(
        source=verdicts.source,
        failed_flagged=wilson_rate(sum(r.flagged for r in failed), len(failed)) if failed else None,
        succeeded_flagged=wilson_rate(sum(r.flagged for r in passed), len(passed)) if passed else None,
        auroc=ci.estimate if ci else None,
        interval=(ci.low, ci.high) if ci else None,
        resampled=f"tasks ({verdicts.task_column})" if verdicts.task_column else "runs",
        without_verdict=sorted({r.file for r in rows} - set(matched)),
        unmatched=sorted(set(verdicts.by_name) - used),
        failed_risk=tuple(r.risk_score for r in failed),
        succeeded_risk=tuple(r.risk_score for r in passed),
    )


def agreement_by_group(verdicts: Verdicts, rows: Iterable, labels: Iterable[str]) -> dict[str, Agreement]:
    """The agreement of each group's runs alone (a repository's, a suite's), in the groups' order."""
    rows, labels = list(rows), list(labels)
    out = {}
    for group in sorted(set(verdicts.groups.values())):
        mine = verdicts.of_group(group)
        matched = mine.matching(labels)
        out[group] = agreement(mine, [r for r in rows if r.file in matched], list(matched))
    return out

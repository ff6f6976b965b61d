"""Triage of many runs: review every file of a folder as `auditor review` does (each trace and
report stored as usual), then rank the runs by ``risk_score`` so a platform team reads the
riskiest of last night's runs first.

Runs are reviewed in worker processes: the audit is pure Python, so one process per core is
what makes hundreds of runs take seconds rather than minutes. Workers are forked after the audit's
modules are imported, so none pays the import again, and each opens its own store connection (the
store serialises appends across processes). A file that cannot be reviewed is reported with the
reason its error gives (file, line, field) and never stops the others.
"""

from __future__ import annotations

import gc
import importlib
import multiprocessing
import os
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path

from auditor.audit.incident import DECISIVE, RISK_WEIGHT
from auditor.audit.policy import Policy
from auditor.audit.report.disposition import ACTIONABLE
from auditor.core.errors import AuditorError
from schemas import AuditReport, Finding, Severity
from schemas.failure import OutcomeSource

RECORDED = (OutcomeSource.flag, OutcomeSource.trace)
_SEVERITY = list(Severity)


@dataclass(frozen=True)
class RunRow:
    """One reviewed run as the ranked table shows it; ``outcome`` is the recorded outcome only
    (``reviewed_outcome`` is the report's, inferred or not). ``flagged``: a detector filed an
    actionable finding (the decisive-step finding a known failure adds reads the outcome, so it
    does not count)."""

    file: str
    trace_id: str
    report_id: str
    outcome: str | None
    reviewed_outcome: str
    risk_score: float
    findings: int
    actionable: int
    flagged: bool
    top_finding: str | None
    top_detector: str | None
    top_disposition: str | None
    agent: str | None
    step_id: str | None

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Unreviewed:
    """A file the triage could not review: ``skipped`` when no importer recognises it (not a run),
    else it failed with ``reason`` (its error's one line: file, line, field)."""

    file: str
    reason: str
    skipped: bool

    def as_dict(self) -> dict:
        return asdict(self)


def top_finding(report: AuditReport) -> Finding | None:
    """The finding that weighs most in the run's risk (disposition weight × confidence), the more
    severe and then the earlier first among equals."""
    ranked = sorted(
        range(len(report.findings)),
        key=lambda i: (
            -RISK_WEIGHT[report.findings[i].disposition] * report.findings[i].confidence,
            -_SEVERITY.index(report.findings[i].severity),
            i,
        ),
    )
    return report.findings[ranked[0]] if ranked else None


def row_of(file: str, report: AuditReport) -> RunRow:
    top = top_finding(report)
    attribution = report.attribution
    outcome = report.outcome
    return RunRow(
        file=file,
        trace_id=report.trace_id,
        report_id=report.report_id,
        outcome=outcome.value.value if outcome is not None and outcome.source in RECORDED else None,
        reviewed_outcome=outcome.value.value if outcome is not None else "unknown",
        risk_score=report.risk_score,
        findings=len(report.findings),
        actionable=sum(f.disposition in ACTIONABLE for f in report.findings),
        flagged=any(f.disposition in ACTIONABLE and f.detector != DECISIVE for f in report.findings),
        top_finding=top.title if top else None,
        top_detector=top.detector if top else None,
        top_disposition=top.disposition.value if top else None,
        agent=attribution.agent if attribution else None,
        step_id=attribution.step_id if attribution else None,
    )


def ranked(rows: Iterable[RunRow]) -> list[RunRow]:
    """Riskiest first; among equal scores recorded failures, then more actionable findings, then
    the file's name (a stable order for the same folder)."""
    return sorted(
        rows, key=lambda r: (-r.risk_score, r.outcome != "failed", -r.actionable, r.file, r.trace_id)
    )


# Each worker process's store, policy and importer choice (set once by _start_worker).
_worker: dict = {}


def _start_worker(store_url: str | None, policy: Policy | None, fmt: str) -> None:
    from auditor.core.store import open_store

    _worker.update(store=open_store(store_url), policy=policy, fmt=fmt)
    gc.freeze()  # the imported modules stay out of every collection the reviews trigger


def _review_one(path: Path, label: str, outcome: str | None) -> list[RunRow] | Unreviewed:
    """Review one file in this worker (``outcome``: its recorded verdict, as ``review --outcome``
    takes it); an error becomes an Unreviewed naming why."""
    from auditor.audit.review import review_file

    try:
        outcomes = review_file(
            _worker["store"], path, fmt=_worker["fmt"], policy=_worker["policy"], outcome=outcome
        )
    except AuditorError as exc:
        return Unreviewed(label, exc.one_line(), skipped="no importer recognises" in str(exc))
    except Exception as exc:  # an importer's or detector's own failure: this file fails, the rest go on
        return Unreviewed(label, f"{label}: {type(exc).__name__}: {exc}", skipped=False)
    if not outcomes:
        return Unreviewed(label, f"{label}: the file holds no trace", skipped=False)
    return [row_of(label, o.report) for o in outcomes]


def _preload() -> None:
    """Import the review's modules (every detector included) before workers fork."""
    from auditor.audit.detectors import REGISTRY

    importlib.import_module("auditor.audit.review")
    importlib.import_module("ingest")
    for name in REGISTRY:
        REGISTRY.load(name)


def triage(
    files: list[tuple[Path, str]],
    *,
    store_url: str | None,
    policy: Policy | None = None,
    fmt: str = "auto",
    jobs: int | None = None,
    outcomes: Mapping[str, str] | None = None,
    on_done: Callable[[str], None] = lambda label: None,
) -> tuple[list[RunRow], list[Unreviewed]]:
    """Review each (path, label) file and return the ranked rows and the files not reviewed.

    ``outcomes`` gives a file's recorded verdict by label (a known failure is attributed).
    ``jobs`` processes review at once (default: the machine's cores, at most one per file); one job
    reviews in this process. ``on_done`` is called with each file's label as it finishes."""
    from auditor.core.store import open_store

    open_store(store_url).close()  # create or check the store once, before workers race to
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(files)))
    known = outcomes or {}
    results: list[list[RunRow] | Unreviewed] = []
    if jobs == 1:
        _start_worker(store_url, policy, fmt)
        try:
            for path, label in files:
                results.append(_review_one(path, label, known.get(label)))
                on_done(label)
        finally:
            _worker.pop("store").close()
            gc.unfreeze()
    else:
        _preload()
        methods = multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("fork" if "fork" in methods else None)
        with ProcessPoolExecutor(
            jobs, mp_context=context, initializer=_start_worker, initargs=(store_url, policy, fmt)
        ) as pool:
            futures = {
                pool.submit(_review_one, path, label, known.get(label)): label for path, label in files
            }
            for future in as_completed(futures):
                results.append(future.result())
                on_done(futures[future])
    rows = [row for r in results if isinstance(r, list) for row in r]
    unreviewed = sorted((r for r in results if isinstance(r, Unreviewed)), key=lambda u: u.file)
    return ranked(rows), unreviewed

"""The relabelling study's tables: agreement, consensus and the coalition rerun, one row block per study.

Each study in the store with two or more imported answer sheets is summarised by the same
``scoring.relabel.relabel_summary`` that `auditor score relabel report` prints; the coalition rerun
pairs the study with every stored coalition run of one of its datasets, as ``report --run`` does.
"""

from __future__ import annotations

from collections import Counter

from auditor.surfaces.evidence_report.source import Evidence
from auditor.surfaces.evidence_report.table import Table, placeholder
from scoring.relabel import (
    AGREEMENT_COLUMNS,
    RERUN_FIELDS,
    RERUN_NOTE,
    CoalitionRerun,
    RelabelSummary,
    coalition_rerun,
    load_sheets,
    load_study,
    relabel_summary,
    studies,
)

STUDY_COMMAND = (
    "auditor score relabel export --dataset agentaudit --per-stratum 10 --out relabel"
    " && auditor score relabel import relabel/answers_*.csv"
)
RUN_COMMAND = "auditor score run --dataset agentaudit --model smollm2 --experiment coalition"

AGREEMENT = (
    "relabel-agreement",
    "Relabelling study: agreement of independent annotators (exact, invalid-vs-not, Fleiss' κ)",
    ["study", "group", "targets", "pairs", "annotators", *AGREEMENT_COLUMNS],
    "target–factor pairs labelled by every annotator, before adjudication, overall and per dataset "
    "(targets: the group's packets; annotators: imported answer sheets); exact: pairs on which all "
    "annotators agree; pairwise: mean agreement over annotator pairs; Fleiss' κ over Valid/Invalid/"
    "Neutral/Excluded, inv/not over Invalid vs the rest",
)
CONSENSUS = (
    "relabel-consensus",
    "Relabelling study: majority-vote consensus, adjudicated splits, agreement with the authored labels",
    [
        "study",
        "annotators",
        "pairs",
        "unanimous",
        "majority (not unanimous)",
        "no majority (split)",
        "splits adjudicated",
        "splits unresolved",
        "consensus = authored",
    ],
    "target–factor pairs of the study (unanimous + majority + no majority = pairs); a pair without a "
    "strict majority takes its adjudicated label, else stays unresolved; consensus = authored: pairs "
    "with a consensus label whose label is the authored one (descriptive, not an accuracy estimate)",
)
COALITION = (
    "relabel-coalition",
    "Relabelling study: coalition metrics rerun under authored, consensus and unanimous-only labels",
    ["study", "model", "dataset", "run", "relabelled targets", *CoalitionRerun.columns],
    "the coalition run's targets that are in the study (relabelled targets); shares over those with an "
    f"Invalid factor under each label set ({', '.join(RERUN_FIELDS)}, sum_logodds, top-50 terms of "
    f"order ≤ 3, 500-permutation label-count null, 95% CI: source-task cluster bootstrap); {RERUN_NOTE}",
)


def study(ev: Evidence) -> list[Table]:
    """Agreement, consensus and coalition-rerun tables over every study with answers to compare."""
    summaries: list[RelabelSummary] = []
    for study_id in studies(ev.store):
        found = load_study(ev.store, study_id)
        sheets, adjudicated, _ = load_sheets(ev.store, found)
        if len(sheets) >= 2:
            summaries.append(relabel_summary(found, sheets, adjudicated))
    if not summaries:
        return [placeholder(*spec, STUDY_COMMAND) for spec in (AGREEMENT, CONSENSUS, COALITION)]
    source = "annotators' answer sheets: " + "; ".join(
        f"study {s.study.study_id} ({', '.join(s.annotators)})" for s in summaries
    )
    key, title, columns, denominator = AGREEMENT
    agreement = Table(key, title, columns, _agreement_rows(summaries), denominator, source)
    key, title, columns, denominator = CONSENSUS
    consensus = Table(key, title, columns, [_consensus_row(s) for s in summaries], denominator, source)
    return [agreement, consensus, _coalition(ev, summaries)]


def _agreement_rows(summaries: list[RelabelSummary]) -> list[list[str]]:
    rows: list[list[str]] = []
    for s in summaries:
        targets = Counter(p.dataset for p in s.study.packets)
        targets["all"] = len(s.study.packets)
        for r in s.agreement:
            rows.append(
                [
                    s.study.study_id,
                    r.group,
                    str(targets[r.group]),
                    str(r.n_pairs),
                    str(len(s.annotators)),
                    *r.cells(),
                ]
            )
    return rows


def _consensus_row(s: RelabelSummary) -> list[str]:
    matched, compared = s.matched, s.compared
    authored = f"{matched}/{compared} {matched / compared:.1%}" if compared else "n/a (no consensus label)"
    return [s.study.study_id, str(len(s.annotators)), *(str(n) for n in s.counts.values()), authored]


def _coalition(ev: Evidence, summaries: list[RelabelSummary]) -> Table:
    """Every (study, coalition run) pair whose run holds some of the study's targets."""
    rows: list[list[str]] = []
    runs: list[str] = []
    models: set[str] = set()
    for s in summaries:
        for run_id, config in ev.runs("coalition"):
            if config.get("dataset") not in s.study.datasets:
                continue
            rerun = coalition_rerun(ev.store, s, run_id, ev.n_resamples)
            if rerun.n_targets == 0:
                continue
            model = str(config.get("model"))
            prefix = [s.study.study_id, model, rerun.dataset, run_id, str(rerun.n_targets)]
            rows += [prefix + r for r in rerun.rows]
            runs.append(run_id)
            models.add(model)
    key, title, columns, denominator = COALITION
    if not rows:
        ids = ", ".join(s.study.study_id for s in summaries)
        empty = f"no coalition run holds targets of study {ids}; produce one on their dataset with `{RUN_COMMAND}`"
        return Table(key, title, columns, [], denominator, "none", empty=empty)
    source = f"model(s) {', '.join(sorted(models))}; coalition run(s) {', '.join(dict.fromkeys(runs))}"
    return Table(key, title, columns, rows, denominator, source)

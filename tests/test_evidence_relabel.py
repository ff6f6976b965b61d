"""The relabelling study in `auditor evidence report`: a study exported and imported through the real
CLI into a SQLite store, its agreement, κ and consensus cells checked against values computed by
hand from the sheets' labels, the coalition rerun paired only with runs holding the study's
targets, and placeholders while no study has two answer sheets."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from auditor.surfaces.cli.main import app
from auditor.surfaces.evidence_report import Evidence, build_tables
from auditor.surfaces.evidence_report.relabel import STUDY_COMMAND, study
from auditor.surfaces.evidence_report.table import NO_RUNS
from scoring.relabel import LABELS, load_study, substituted
from scoring.report import summarise_run, table_rows
from scoring.runs import read_run, start_run
from tests.test_scoring_relabel import _coalition_run, _rows, _write, cli, filled  # noqa: F401  (fixtures)

RESAMPLES = 200
KEYS = ["relabel-agreement", "relabel-consensus", "relabel-coalition"]


def _kappa(counts: Counter[str], raters: int, pairs: int, p_bar: float) -> float:
    """Fleiss' κ from the pooled rating counts and the mean per-pair agreement P̄."""
    p_e = sum((n / (raters * pairs)) ** 2 for n in counts.values())
    return (p_bar - p_e) / (1 - p_e)


def _imported(invoke: Any, folder: Path) -> None:
    sheets = [str(folder / f"answers_annotator-{i}.csv") for i in (1, 2, 3)]
    result = invoke(["import", *sheets])
    assert result.exit_code == 0, result.output


def _by_key(tables: list[Any]) -> dict[str, Any]:
    return {t.key: t for t in tables}


def test_no_study_keeps_placeholders_naming_the_commands(sqlite_store: Any) -> None:
    tables = study(Evidence(sqlite_store, RESAMPLES))
    assert [t.key for t in tables] == KEYS
    for t in tables:
        assert t.rows == [] and t.source == "none"
        assert t.empty == f"{NO_RUNS}; produce them with `{STUDY_COMMAND}`"
    assert "auditor score relabel export" in STUDY_COMMAND and "auditor score relabel import" in STUDY_COMMAND


def test_exported_study_without_answers_stays_a_placeholder(cli: Any, filled: dict[str, Any]) -> None:  # noqa: F811
    assert load_study(cli.store).study_id  # exported, nothing imported yet
    assert all(t.empty is not None for t in study(Evidence(cli.store, RESAMPLES)))


def test_agreement_and_consensus_by_hand(cli: Any, filled: dict[str, Any]) -> None:  # noqa: F811
    """62 of 64 pairs unanimous; pair a votes neutral/neutral/invalid, pair b valid/neutral/excluded."""
    _imported(cli, filled["dir"])
    tables = _by_key(study(Evidence(cli.store, RESAMPLES)))
    agreement, consensus, coalition = (tables[k] for k in KEYS)
    sid = load_study(cli.store).study_id
    assert "annotator-1, annotator-2, annotator-3" in agreement.source and sid in agreement.source
    authored = Counter(filled["authored"].values())  # 3 ratings per pair, then a's and b's changes
    counts = Counter({c: 3 * authored[c] for c in LABELS})
    counts.update({"invalid": -2, "neutral": 3, "valid": -2, "excluded": 1})
    kappa = _kappa(counts, 3, 64, (62 + 1 / 3) / 64)
    binary = Counter({"invalid": counts["invalid"], "not": 192 - counts["invalid"]})
    binary_kappa = _kappa(binary, 3, 64, (63 + 1 / 3) / 64)
    expected = [
        f"{62 / 64:.3f}",
        f"{(62 + 1 / 3) / 64:.3f}",
        f"{kappa:.3f}",
        f"{63 / 64:.3f}",
        f"{(63 + 1 / 3) / 64:.3f}",
        f"{binary_kappa:.3f}",
    ]
    assert agreement.rows == [
        [sid, "all", "8", "64", "3", *expected],
        [sid, "agentaudit", "8", "64", "3", *expected],
    ]
    assert 0 < kappa < 1 and kappa != binary_kappa
    assert consensus.rows == [[sid, "3", "64", "62", "1", "1", "0", "1", f"62/63 {62 / 63:.1%}"]]
    assert coalition.rows == [] and coalition.empty is not None
    assert coalition.empty.startswith(f"no coalition run holds targets of study {sid}; ")

    # the CLI report renders the same summary
    report = json.loads(cli(["report", "--json", "--out", str(filled["dir"] / "rep")]).stdout)
    [overall] = [r for r in report["agreement"] if r["group"] == "all"]
    assert overall["kappa"] == pytest.approx(kappa) and overall["binary_kappa"] == pytest.approx(binary_kappa)

    # adjudicating the split b as Valid resolves it and matches the author there
    path = filled["dir"] / "rep" / "adjudication.csv"
    _write(path, [_rows(path)[0] | {"label": "Valid"}])
    assert cli(["import", "--adjudication", str(path), "--study", sid]).exit_code == 0
    [row] = _by_key(study(Evidence(cli.store, RESAMPLES)))["relabel-consensus"].rows
    assert row[5:] == ["1", "1", "0", f"63/64 {63 / 64:.1%}"]


def test_coalition_rerun_pairs_runs_of_the_study_s_datasets(cli: Any, filled: dict[str, Any]) -> None:  # noqa: F811
    """The run holding the study's targets is rerun under each label set; a coalition run of another
    dataset and one with none of the targets are not."""
    _imported(cli, filled["dir"])
    a, b = filled["a"], filled["b"]
    found = load_study(cli.store)
    run = _coalition_run(cli.store, found)
    start_run(cli.store, "empty", {"dataset": "agentaudit", "model": "fake", "experiment": "coalition"})
    start_run(cli.store, "other", {"dataset": "tau2audit", "model": "fake", "experiment": "coalition"})
    coalition = _by_key(study(Evidence(cli.store, RESAMPLES)))["relabel-coalition"]
    assert coalition.empty is None and coalition.source == f"model(s) fake; coalition run(s) {run}"
    _, targets = read_run(cli.store, run)
    scored = list(targets)
    authored = filled["authored"]
    for labels, chosen in (
        ("authored", authored),
        ("consensus", authored | {a: "neutral"}),  # the split b, unadjudicated, counts as Neutral
        ("unanimous-only", authored | {a: "neutral", b: "neutral"}),
    ):
        subset = substituted(scored, found, "agentaudit", chosen)
        want = table_rows(summarise_run(subset, fields=("s_any", "s_frac"), n_resamples=RESAMPLES))
        got = [r for r in coalition.rows if r[5] == labels]
        assert [r[6:] for r in got] == want and want, labels
        assert {tuple(r[:5]) for r in got} == {(found.study_id, "fake", "agentaudit", run, "8")}


def test_evidence_report_lists_the_tables_after_the_repair_retests(
    cli: Any,  # noqa: F811
    filled: dict[str, Any],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`auditor evidence report --json` carries the builder's tables, registered after the retests."""
    _imported(cli, filled["dir"])
    monkeypatch.setattr("auditor.surfaces.cli.evidence_cmd.open_cli_store", lambda: cli.store)
    result = CliRunner().invoke(app, ["evidence", "report", "--json", "--resamples", str(RESAMPLES)])
    assert result.exit_code == 0, result.output
    tables = {t["key"]: t for t in json.loads(result.stdout)["tables"]}
    keys = list(tables)
    after = keys.index("repair-retest") + 1
    assert keys[after : after + 3] == KEYS
    for table in study(Evidence(cli.store, RESAMPLES)):
        assert tables[table.key] == table.as_json()
    assert [t.key for t in build_tables(Evidence(cli.store, RESAMPLES))] == keys

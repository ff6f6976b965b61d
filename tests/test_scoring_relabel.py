"""The relabelling study: Fleiss' κ against textbook and hand-computed values, majority vote with
three-way splits, the unanimous-only mapping, an export that leaks no label or score, an import
whose bad line names file, line and field and stores nothing, and the coalition rerun under
consensus labels through scoring.report."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from auditor.core.errors import InputError
from auditor.surfaces.cli.main import app
from scoring.datasets import build_dataset
from scoring.relabel import (
    LABELS,
    Study,
    agreement,
    collect_votes,
    consensus,
    draw_study,
    fleiss_kappa,
    load_study,
    majority_label,
    parse_sheet,
    substituted,
    unanimous_only,
)
from scoring.report import summarise_run, table_rows
from scoring.runs import SCORE_FIELDS, ScoredTarget, read_run, start_run, target_event

# Fleiss (1971) as tabulated in the Wikipedia article "Fleiss' kappa": 10 subjects, 14 raters,
# 5 categories; P̄ = 0.378, P_e = 0.213, κ = 0.210.
FLEISS_TABLE = np.array(
    [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
)
# Four pairs, three raters: unanimous valid, 2-of-3 valid, unanimous invalid, a three-way split.
SMALL = {
    ("P1", "f0"): ["valid", "valid", "valid"],
    ("P1", "f1"): ["valid", "valid", "invalid"],
    ("P1", "f2"): ["invalid", "invalid", "invalid"],
    ("P1", "f3"): ["neutral", "invalid", "valid"],
}


def test_fleiss_kappa_textbook_example() -> None:
    assert fleiss_kappa(FLEISS_TABLE) == pytest.approx(0.20993, abs=1e-5)


def test_fleiss_kappa_matches_statsmodels() -> None:
    inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")
    rng = np.random.default_rng(5)
    table = np.array([rng.multinomial(3, [0.5, 0.2, 0.25, 0.05]) for _ in range(40)])
    assert fleiss_kappa(table) == pytest.approx(inter_rater.fleiss_kappa(table), abs=1e-12)
    assert fleiss_kappa(FLEISS_TABLE) == pytest.approx(inter_rater.fleiss_kappa(FLEISS_TABLE), abs=1e-12)


def test_fleiss_kappa_refuses_unequal_raters() -> None:
    with pytest.raises(ValueError, match="same number"):
        fleiss_kappa(np.array([[2, 1], [1, 1]]))


def test_agreement_by_hand() -> None:
    [row] = agreement(SMALL)
    # P_i = 1, 1/3, 1, 0 → P̄ = 7/12; p = (1/2, 5/12, 1/12, 0) → P_e = 62/144; κ = 22/82.
    assert (row.n_pairs, row.exact, row.pairwise) == (4, 0.5, pytest.approx(7 / 12))
    assert row.kappa == pytest.approx(11 / 41)
    # Invalid vs not: P_i = 1, 1/3, 1, 1/3 → P̄ = 2/3; p = (5/12, 7/12) → P_e = 74/144; κ = 22/70.
    assert (row.binary_exact, row.binary_pairwise) == (0.5, pytest.approx(2 / 3))
    assert row.binary_kappa == pytest.approx(11 / 35)


def test_majority_split_adjudication_and_unanimous_only() -> None:
    assert majority_label(["a", "b", "a"]) == "a" and majority_label(["a", "b"]) is None
    cons = consensus(SMALL)
    assert (cons.unanimous, cons.majority, cons.splits) == (2, 1, [("P1", "f3")])
    assert cons.unresolved == [("P1", "f3")] and ("P1", "f3") not in cons.labels
    assert cons.labels[("P1", "f1")] == "valid"
    done = consensus(SMALL, {("P1", "f3"): "invalid"})
    assert done.unresolved == [] and done.labels[("P1", "f3")] == "invalid" and done.adjudicated == 1
    assert unanimous_only(SMALL) == {
        ("P1", "f0"): "valid",
        ("P1", "f1"): "neutral",
        ("P1", "f2"): "invalid",
        ("P1", "f3"): "neutral",
    }


def test_draw_is_stratified_and_seeded() -> None:
    tasks = {"agentaudit": build_dataset("agentaudit")[:40]}
    study, chosen = draw_study(tasks, 3, seed=7)
    again, _ = draw_study(tasks, 3, seed=7)
    other, _ = draw_study(tasks, 3, seed=8)
    assert study == again and [p.target_key for p in other.packets] != [p.target_key for p in study.packets]
    strata = [p.stratum for p in study.packets]
    assert sorted(set(strata)) == [
        "agentaudit/slot/with-invalid",
        "agentaudit/slot/without-invalid",
        "agentaudit/tool/with-invalid",
        "agentaudit/tool/without-invalid",
    ]
    assert all(strata.count(s) == 3 for s in set(strata))
    for p in study.packets:
        _, target = chosen[p.packet_id]
        assert p.authored == target.labels() and p.stratum.endswith(
            "with-invalid" if "invalid" in target.labels() else "without-invalid"
        )


# -- the CLI end to end ------------------------------------------------------------------------


@pytest.fixture
def cli(sqlite_store: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr("auditor.surfaces.cli.relabel_cmd.open_cli_store", lambda: sqlite_store)

    def invoke(args: list[str]) -> Any:
        return CliRunner().invoke(app, ["score", "relabel", *args])

    invoke.store = sqlite_store  # type: ignore[attr-defined]
    return invoke


def _export(cli: Any, out: Path) -> dict[str, Any]:
    result = cli(["export", "--dataset", "agentaudit", "--per-stratum", "2", "--out", str(out)])
    assert result.exit_code == 0, result.output
    return json.loads((out / "packets_annotator-1.json").read_text())


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open() as fh:
        return list(csv.DictReader(fh))


def _write(path: Path, rows: list[dict[str, str]]) -> None:
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def test_export_carries_no_label_reason_or_score(cli: Any, tmp_path: Path) -> None:
    packets = _export(cli, tmp_path)
    tasks = {t.task_id: t for t in build_dataset("agentaudit")}
    assert len(packets["packets"]) == 8 and packets["labels"] == ["Valid", "Invalid", "Neutral", "Excluded"]
    text = json.dumps(packets["packets"])
    for banned in (
        "label",
        "reason",
        "authority",
        "relation",
        "competing",
        "rewrite",
        "score",
        "logodds",
        "harsanyi",
    ):
        assert banned not in text.lower(), banned
    for p in packets["packets"]:
        task = tasks[p["target_key"].split("/")[0]]
        assert [f["text"] for f in p["factors"]] == [f.text for f in task.factors]
        assert {f["source_type"] for f in p["factors"]} <= {f.source_type.value for f in task.factors}
        for target in task.targets:
            for j in target.judgments:
                assert j.reason not in text
    md = (tmp_path / "packets_annotator-1.md").read_text()
    assert "authority test" in md and all(p["packet_id"] in md for p in packets["packets"])
    sheet = _rows(tmp_path / "answers_annotator-2.csv")
    assert len(sheet) == 64 and {r["label"] for r in sheet} == {""}
    assert {r["annotator"] for r in sheet} == {"annotator-2"}
    # same packets, each annotator in an order of their own
    second = json.loads((tmp_path / "packets_annotator-2.json").read_text())["packets"]
    assert sorted(p["packet_id"] for p in second) == sorted(p["packet_id"] for p in packets["packets"])


def _fill(sheet: list[dict[str, str]], labels: dict[tuple[str, str], str]) -> list[dict[str, str]]:
    return [r | {"label": labels[(r["packet_id"], r["factor_id"])].capitalize()} for r in sheet]


@pytest.fixture
def filled(cli: Any, tmp_path: Path) -> dict[str, Any]:
    """Three sheets: 1 and 2 copy the authored labels except where noted; the changes are
    - pair A: annotators 1 and 2 both say Neutral where the author said Invalid (consensus ≠ author);
    - pair B: a three-way split (author's label, then two different ones)."""
    _export(cli, tmp_path)
    tasks = build_dataset("agentaudit")
    labels_of = {t.target_key(x): x.labels() for t in tasks for x in t.targets}
    sheet = _rows(tmp_path / "answers_annotator-1.csv")
    authored = {
        (r["packet_id"], r["factor_id"]): labels_of[r["target_key"]][int(r["factor_id"][1:])] for r in sheet
    }
    a = next(p for p, lab in authored.items() if lab == "invalid")
    b = next(p for p, lab in authored.items() if lab == "valid")
    one, two, three = dict(authored), dict(authored), dict(authored)
    one[a] = two[a] = "neutral"
    two[b], three[b] = "neutral", "excluded"
    for name, labels in (("1", one), ("2", two), ("3", three)):
        rows = _rows(tmp_path / f"answers_annotator-{name}.csv")
        _write(tmp_path / f"answers_annotator-{name}.csv", _fill(rows, labels))
    return {"authored": authored, "a": a, "b": b, "votes": (one, two, three), "dir": tmp_path}


@pytest.mark.parametrize(
    ("edit", "line_field", "message"),
    [
        (
            lambda r: r | {"label": "Maybe"},
            "field 'label'",
            "'Maybe' is not one of Valid, Invalid, Neutral, Excluded",
        ),
        (lambda r: r | {"factor_id": "f9"}, "field 'factor_id'", "unknown factor 'f9'"),
        (lambda r: r | {"packet_id": "P99"}, "field 'packet_id'", "unknown packet 'P99'"),
        (lambda r: r | {"annotator": "someone"}, "field 'annotator'", "differs from 'annotator-1'"),
    ],
)
def test_bad_line_names_file_line_field_and_stores_nothing(
    cli: Any, filled: dict[str, Any], edit: Any, line_field: str, message: str
) -> None:
    folder = filled["dir"]
    path = folder / "answers_annotator-1.csv"
    rows = _rows(path)
    rows[4] = edit(rows[4])  # data row 5 is line 6 of the file (after the header)
    _write(path, rows)
    version = cli.store.last_position()
    result = cli(["import", str(folder / "answers_annotator-2.csv"), str(path)])
    assert result.exit_code != 0 and isinstance(result.exception, InputError)
    line = result.exception.one_line()
    assert line.startswith(f"{path}, line 6, {line_field}: ") and message in line and "\n" not in line
    assert cli.store.last_position() == version  # sheet 2 was valid, yet nothing was stored


def test_duplicate_and_missing_rows(cli: Any, filled: dict[str, Any]) -> None:
    folder = filled["dir"]
    path = folder / "answers_annotator-3.csv"
    rows = _rows(path)
    _write(path, [*rows[:10], rows[3], *rows[11:]])  # row 11 replaced by a copy of row 4
    with pytest.raises(InputError, match=r"line 12, field 'factor_id': duplicate row .* \(first on line 5\)"):
        parse_sheet(path, _study(cli))
    _write(path, rows[:-1])
    with pytest.raises(InputError, match=r"answers_annotator-3.csv, field 'factor_id': 1 row\(s\) missing"):
        parse_sheet(path, _study(cli))


def test_adjudication_rows_must_be_open_splits(cli: Any, filled: dict[str, Any]) -> None:
    from scoring.relabel import ADJUDICATION_COLUMNS, sheet_csv

    a, b = filled["a"], filled["b"]
    path = filled["dir"] / "adjudication.csv"
    row = {"annotator": "adjudicator", "votes": "", "label": "Valid", "competing_value": "", "target_key": ""}
    rows = [row | {"packet_id": b[0], "factor_id": b[1]}, row | {"packet_id": a[0], "factor_id": a[1]}]
    path.write_text(sheet_csv(rows, ADJUDICATION_COLUMNS))
    with pytest.raises(
        InputError, match=rf"line 3, field 'factor_id': {a[0]}/{a[1]} is not a three-way split"
    ):
        parse_sheet(path, _study(cli), [b], adjudication=True)
    path.write_text(sheet_csv(rows[:1], ADJUDICATION_COLUMNS))
    sheet = parse_sheet(path, _study(cli), [b], adjudication=True)
    assert sheet.annotator == "adjudicator" and sheet.answers == {b: "valid"}


def _study(cli: Any) -> Study:
    return load_study(cli.store)


def test_json_sheet_errors_name_the_line(cli: Any, filled: dict[str, Any]) -> None:
    from scoring.relabel import sheet_json

    rows = _rows(filled["dir"] / "answers_annotator-1.csv")
    rows[2]["label"] = ""
    path = filled["dir"] / "answers_annotator-1.json"
    path.write_text(sheet_json(rows))
    with pytest.raises(InputError, match=r"answers_annotator-1.json, line 4, field 'label': label is empty"):
        parse_sheet(path, _study(cli))


def _coalition_run(store: Any, study: Any) -> str:
    """A stored coalition run over the study's targets: positive games strongest on Invalid factors."""
    rng = np.random.default_rng(11)
    tasks = {t.task_id: t for t in build_dataset("agentaudit")}
    start_run(store, "rl-run", {"dataset": "agentaudit", "model": "fake", "experiment": "coalition"})
    for p in study.packets:
        task = tasks[p.task_id]
        index = [t.target_id for t in task.targets].index(p.target_id)
        inv = [i for i, lab in enumerate(p.authored) if lab == "invalid"]
        div = np.zeros(256)
        for mask in range(1, 256):
            if mask.bit_count() <= 3:
                div[mask] = abs(rng.normal()) * (3.0 if any(mask >> i & 1 for i in inv) else 1.0)
        game = np.array([div[[b for b in range(256) if s & b == b]].sum() for s in range(256)])
        event = target_event("rl-run", task, index, np.arange(256), {f: game for f in SCORE_FIELDS}, 3)
        store.append("score-run-rl-run", [event])
    return "rl-run"


def test_import_report_adjudicate_and_coalition_rerun(cli: Any, filled: dict[str, Any]) -> None:
    folder, a, b = filled["dir"], filled["a"], filled["b"]
    sheets = [str(folder / f"answers_annotator-{i}.csv") for i in (1, 2, 3)]
    result = cli(["import", *sheets])
    assert result.exit_code == 0 and "3 answer sheet(s) stored" in result.output, result.output
    again = cli(["import", sheets[0]])
    assert again.exit_code == 0 and "0 answer sheet(s) stored, 1 already" in again.output

    result = cli(["report", "--json", "--out", str(folder / "rep")])
    assert result.exit_code == 0, result.output
    rep = json.loads(result.stdout)
    one, two, three = filled["votes"]
    votes = {p: [one[p], two[p], three[p]] for p in one}
    [overall] = [r for r in rep["agreement"] if r["group"] == "all"]
    counts = np.array([[v.count(c) for c in LABELS] for v in votes.values()])
    assert overall["kappa"] == pytest.approx(fleiss_kappa(counts)) and overall["n_pairs"] == 64
    assert overall["exact"] == pytest.approx(62 / 64)  # every pair but a and b is unanimous
    assert rep["counts"] == {
        "pairs": 64,
        "unanimous": 62,
        "majority": 1,
        "no_majority": 1,
        "adjudicated": 0,
        "unresolved": 1,
    }
    assert rep["splits"] == [
        {
            "packet_id": b[0],
            "target_key": rep["splits"][0]["target_key"],
            "factor_id": b[1],
            "votes": "valid/neutral/excluded",
        }
    ]
    assert rep["consensus_vs_authored"] == {"matched": 62, "compared": 63, "rate": 62 / 63}

    adjudication = folder / "rep" / "adjudication.csv"
    rows = _rows(adjudication)
    assert [(r["packet_id"], r["factor_id"], r["label"]) for r in rows] == [(b[0], b[1], "")]
    _write(adjudication, [rows[0] | {"label": "Valid"}])
    result = cli(["import", "--adjudication", "--study", rep["study"], str(adjudication)])
    assert result.exit_code == 0 and "1 adjudicated label(s) stored" in result.output, result.output

    run = _coalition_run(cli.store, _study(cli))
    result = cli(["report", "--json", "--run", run, "--resamples", "200"])
    assert result.exit_code == 0, result.output
    rep = json.loads(result.stdout)
    assert rep["counts"]["adjudicated"] == 1 and rep["counts"]["unresolved"] == 0 and rep["splits"] == []
    assert rep["consensus_vs_authored"] == {"matched": 63, "compared": 64, "rate": 63 / 64}
    coalition = rep["coalition"]
    assert coalition["n_targets"] == 8
    study = _study(cli)
    _, targets = read_run(cli.store, run)
    scored = list(targets)
    consensus_labels = dict(filled["authored"]) | {a: "neutral"}
    unanimous = dict(filled["authored"]) | {a: "neutral", b: "neutral"}
    for name, labels in (
        ("authored", filled["authored"]),
        ("consensus", consensus_labels),
        ("unanimous-only", unanimous),
    ):
        subset = substituted(scored, study, "agentaudit", labels)
        expected = table_rows(summarise_run(subset, fields=("s_any", "s_frac"), n_resamples=200))
        assert [r[1:] for r in coalition["rows"] if r[0] == name] == expected, name
    by_name = {
        n: [r for r in coalition["rows"] if r[0] == n] for n in ("authored", "consensus", "unanimous-only")
    }
    assert by_name["authored"] != by_name["consensus"] != by_name["unanimous-only"]
    assert {r[1] for r in coalition["rows"]} >= {"harsanyi", "shapley", "full"}


def test_substitution_keeps_factor_order_and_leaves_others_out() -> None:
    task = build_dataset("agentaudit")[0]
    study, _ = draw_study({"agentaudit": [task]}, 1)
    ref = study.packets[0]
    game = np.zeros(256)
    in_study = ScoredTarget(
        task.task_id,
        ref.target_id,
        ref.kind,
        task.setting,
        ref.authored,
        np.arange(256),
        {f: game for f in SCORE_FIELDS},
    )
    other = ScoredTarget(
        "elsewhere", "tool", "tool", "x", ref.authored, np.arange(256), {f: game for f in SCORE_FIELDS}
    )
    labels = {(ref.packet_id, f): ("invalid" if f == "f5" else "valid") for f in ref.factor_ids}
    [out] = substituted([in_study, other], study, "agentaudit", labels)
    assert out.labels == ["valid"] * 5 + ["invalid"] + ["valid"] * 2 and out.scores is in_study.scores
    assert substituted([in_study], study, "tau2audit", labels) == []
    assert collect_votes([]) == {}

"""`auditor evidence report` on a real SQLite store seeded with real runs: a tiny random-model
coalition run, fake-decoder generation and degradation runs, matched runs of two models, a
12-factor screening run, scripted A1 and F1 cohorts and an A1 repair retest. The rendered set is
checked for every table, its denominators, the placeholders, the simulation label, CSV values
computed here independently, and the PNGs."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from auditor.core.store import open_store
from auditor.surfaces.cli.main import app
from auditor.surfaces.evidence_report import NO_RUNS, Evidence, build_tables
from repair.retest import RetestPlan
from repair.service import propose_step, retest_step, review_step
from scoring.datasets import build_dataset
from scoring.runs import run_coalition, run_matched, run_per_target, screening_event, start_run
from scoring.scorer import TargetScores, TrieScorer
from scoring.screening import with_distractors
from scoring.stats import wilson_rate
from tests.cli_helpers import run as run_cli
from tests.repair_support import open_audited_repair
from tests.scoring_support import generate_resumably, scripted_action
from tests.test_scoring_degradation import fake_decode
from tests.test_scoring_runs import short_tokens, tiny_model  # noqa: F401  (a fixture)
from worlds import get_world, quick_cohort, record_cohort

HAND = {"base": 1.0, "T_S": 3.0, "U_S": 1.5, "T_C": -2.0, "U_C": 0.0}  # ΔΔ = 0.5 (test_scoring_interventions)
RESAMPLES = 200


def _matched(store: Any, run_id: str, model: str, u_c: float) -> None:
    start_run(store, run_id, {"dataset": "agentaudit", "model": model, "experiment": "matched"})
    scores = HAND | {"U_C": u_c, "drop": -2.0, "drop_U": -1.5}

    def score(task, target):  # type: ignore[no-untyped-def]
        return {c: {"sum_logodds": x, "mean_logodds": x, "sum_logprob": -x} for c, x in scores.items()}, 2

    run_matched(store, run_id, build_dataset("agentaudit")[:3], score, kinds={"tool"})


def _screening(store: Any) -> None:
    tasks = build_dataset("agentaudit")[:2]
    config = {
        "dataset": "agentaudit",
        "model": "fake",
        "experiment": "screening",
        "n_factors": 12,
        "order": 2,
    }
    start_run(store, "s12", config)
    from scoring.screening import masks_through_order

    masks = np.array(masks_through_order(12, 2))
    # additive game rewarding factors 0–7: every selector keeps the eight original factors
    values = np.array([sum(1.0 + i for i in range(8) if m >> i & 1) for m in masks], dtype=float)

    def event(task, target):  # type: ignore[no-untyped-def]
        ctx = with_distractors(task, target, tasks, 12)
        return screening_event(
            "s12", task, target, ctx.labels, TargetScores(masks, values, values, values, 1)
        )

    run_per_target(store, "s12", tasks, event, kinds={"tool"})


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory, tiny_model) -> dict[str, Any]:  # type: ignore[no-untyped-def]  # noqa: F811
    """One store with every family but the guardrail, 16-factor screening and C1/B1/D1 worlds."""
    root = tmp_path_factory.mktemp("evidence")
    url = f"sqlite:///{root / 'auditor.db'}"
    store = open_store(url)
    gen_tasks = build_dataset("agentaudit")[:2]
    scorer = TrieScorer(tiny_model, token_budget=256)
    # the fake decoder's runs share dataset and "model", so the prediction tables join them
    start_run(store, "c1", {"dataset": "agentaudit", "model": "fake", "experiment": "coalition"})
    run_coalition(
        store,
        "c1",
        gen_tasks,
        lambda t, todo: scorer.score(short_tokens(t, [t.targets[i] for i in todo])),
        kinds={"tool"},  # the generated-action runs audit tool targets only
    )
    generate_resumably(store, "g1", "generation", gen_tasks, lambda task, lines: scripted_action(task, True))
    generate_resumably(store, "d1", "degradation", gen_tasks, fake_decode)
    _matched(store, "ma", "model-a", 0.0)
    _matched(store, "mb", "model-b", 1.0)  # D_U = 0, so δ_C = 3 and ΔΔ = 1.5
    _screening(store)
    a1 = quick_cohort("A1", episodes=4)
    f1 = quick_cohort("F1", episodes=8)
    c1 = quick_cohort("C1", episodes=2 * len(get_world("C1").canonical_conditions))
    d1 = quick_cohort("D1", episodes=6)
    for cohort in (a1, f1, c1, d1):
        record_cohort(store, cohort)
    repair_id = open_audited_repair(store, "A1")
    propose_step(store, repair_id)
    review_step(store, repair_id)
    retest = retest_step(store, repair_id, RetestPlan(episodes=4, seed=20_000))
    out = root / "evidence"
    runner = CliRunner()
    env = {"AUDITOR_STORE": url, "COLUMNS": "200"}
    result = runner.invoke(
        app, ["evidence", "report", "--out", str(out), "--resamples", str(RESAMPLES)], env=env
    )
    assert result.exit_code == 0, result.output
    as_json = runner.invoke(app, ["evidence", "report", "--json", "--resamples", str(RESAMPLES)], env=env)
    assert as_json.exit_code == 0, as_json.output
    yield {
        "store": store,
        "url": url,
        "out": out,
        "output": result.output,
        "json": json.loads(as_json.output),
        "a1": a1,
        "f1": f1,
        "c1": c1,
        "d1": d1,
        "retest": retest,
        "tasks": gen_tasks,
    }
    store.close()


def _csv(out: Path, key: str) -> list[dict[str, str]]:
    with (out / f"{key}.csv").open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_markdown_has_every_table_with_denominator_and_source(seeded: dict[str, Any]) -> None:
    text = (seeded["out"] / "evidence.md").read_text()
    tables = seeded["json"]["tables"]
    assert len(tables) == 52
    for t in tables:
        assert f"## {t['title']}" in text
        assert f"- Denominator: {t['denominator']}" in text and t["denominator"]
        assert (seeded["out"] / f"{t['key']}.csv").exists()
    assert "52 tables" in seeded["output"]
    for title in (
        "Table 1 style",
        "Same-proposition control",
        "retained-invalid",
        "Coalition anchors",
        "screening at 12 factors",
        "AUROCs of score-based predictors",
        "(§13.3)",
        "screening at 16 factors",
        "Guardrail",
        "Implementation × risk",
        "C1 handoff matrix",
        "D1 protected-field atlas",
        "F1 cascade partition",
        "Repair retests",
        "Exact-text co-present check",
        "Score-elicitation variants",
        "NOT the teacher-forced target-token audit",
        "Computational workload",
        "labels shuffled within the six content buckets",
        "exact coarsening by source–type groups",
        "role/competition-matched",
    ):
        assert title in text


def test_stored_score_controls_of_the_coalition_run(seeded: dict[str, Any]) -> None:
    null = _csv(seeded["out"], "control-content-null")
    anchors = _csv(seeded["out"], "coalition")
    assert null and {r["run"] for r in null} == {"c1"}
    observed = {(r["method"], r["top-K"], r["cell"], r["share"]): r["observed"] for r in anchors}
    shared = [r for r in null if (r["method"], r["top-K"], r["cell"], r["share"]) in observed]
    assert shared  # the same observed shares as the main table: only the null differs
    for row in shared:
        assert row["observed"] == observed[row["method"], row["top-K"], row["cell"], row["share"]]
    for key in ("control-salience", "control-value-bearing", "control-role", "coarsening-type"):
        assert _csv(seeded["out"], key), key


def test_workload_counts_the_design_s_model_requests(seeded: dict[str, Any]) -> None:
    rows = {r["run"]: r for r in _csv(seeded["out"], "workload")}
    assert set(rows) == {"c1", "g1", "d1", "ma", "mb", "s12"}
    assert rows["c1"]["model requests"] == "512" and rows["c1"]["records"] == "2"  # 2 tool targets × 256
    assert rows["ma"]["model requests"] == "21"  # 3 targets × 7 scored contexts
    assert rows["s12"]["model requests"] == f"{2 * 79}"  # 2 targets × masks through order 2 of 12
    assert rows["c1"]["scoring time"] == "not recorded"  # written by the test, not by `score run`


def test_families_without_runs_keep_their_table_and_say_so(seeded: dict[str, Any]) -> None:
    by_key = {t["key"]: t for t in seeded["json"]["tables"]}
    empty = {k for k, t in by_key.items() if t["empty"]}
    assert empty == {
        "paired-order-shuffle",
        "paired-placeholder",
        "paired-no-invalid",
        "elicitation",
        "perturbation_flips",
        "perturbation_consequence",
        "free_generation",
        "api_proxy",
        "screening-16",
        "guardrail_errors",
        "guardrail_change",
        "world-B1-endpoints",
        "world-rank",
        "relabel-agreement",
        "relabel-consensus",
        "relabel-coalition",
    }
    text = (seeded["out"] / "evidence.md").read_text()
    assert (
        f"_{NO_RUNS}; produce them with `auditor score run --dataset agentaudit --model smollm2 "
        "--experiment guardrail`._" in text
    )
    assert "`auditor world run B1 --episodes 20`" in text
    assert by_key["world-rank"]["empty"].startswith("no pair of worlds shares 3 implementations")
    assert by_key["guardrail_errors"]["columns"][:3] == ["model", "dataset", "run"]


def test_scripted_cohorts_are_labelled_simulations(seeded: dict[str, Any]) -> None:
    by_key = {t["key"]: t for t in seeded["json"]["tables"]}
    for key in (
        "c1-handoff-matrix",
        "c1-interception",
        "d1-field-atlas",
        "world-A1-endpoints",
        "world-F1-endpoints",
        "world-contrasts",
        "world-matrix",
        "f1-cascade",
        "repair-retest",
    ):
        table = by_key[key]
        assert table["simulation"] and table["rows"]
        assert all(r["evidence"] == "simulation (scripted policy)" for r in table["rows"])
    assert not any(by_key[k]["simulation"] for k in ("matched", "coalition", "accuracy"))
    text = (seeded["out"] / "evidence.md").read_text()
    assert text.count("**Simulation.**") == 11
    assert "model measurement" not in text.split("## World A1")[1].split("## World B1")[0]


def test_world_rates_match_an_independent_count(seeded: dict[str, Any]) -> None:
    a1 = seeded["a1"]
    rows = [r for r in _csv(seeded["out"], "world-A1-endpoints") if r["cohort"] == a1.cohort_id]
    world = get_world("A1")
    for condition in a1.conditions:
        eps = [e for e in a1.episodes if e.spec.condition == condition]
        k = sum(bool(e.outcome.endpoints[world.primary]) for e in eps)
        row = next(r for r in rows if r["condition"] == condition and r["endpoint"] == f"{world.primary} *")
        r = wilson_rate(k, len(eps))
        assert row["n/N"] == f"{k}/{len(eps)}" and row["95% CI"] == f"[{r.low:.1%}, {r.high:.1%}]"
    assert {r["condition"] for r in rows} == {*a1.conditions, "pooled"}
    # the contrast pairs job i of each condition: same policy, seed and identity
    contrast = next(r for r in _csv(seeded["out"], "world-contrasts") if r["world"] == "A1")
    ref, cond = a1.conditions
    by = {
        c: {
            e.spec.seed: bool(e.outcome.endpoints[world.primary])
            for e in a1.episodes
            if e.spec.condition == c
        }
        for c in a1.conditions
    }
    b = sum(by[ref][s] and not by[cond][s] for s in by[ref])
    c = sum(by[cond][s] and not by[ref][s] for s in by[ref])
    assert contrast["condition vs reference"] == f"{cond} vs {ref}" and contrast["pairs"] == str(len(by[ref]))
    assert contrast["McNemar (ref-only vs cond-only)"].startswith(f"{b} vs {c}, p=")
    assert contrast["95% CI (implementation-clustered bootstrap)"] == "n/a (one implementation)"


def test_f1_cascade_partition_counts_every_valid_episode(seeded: dict[str, Any]) -> None:
    f1 = seeded["f1"]
    depths = Counter(e.outcome.measures["cascade_depth"] for e in f1.episodes)
    rows = _csv(seeded["out"], "f1-cascade")
    assert len(rows) == 4
    counts = [int(r["episodes / valid episodes"].split("/")[0]) for r in rows]
    assert counts == [depths.get(d, 0) for d in (1, 2, 3, 4)] and sum(counts) == len(f1.episodes)


def test_c1_and_d1_tables_tabulate_the_judges_measures(seeded: dict[str, Any]) -> None:
    c1 = seeded["c1"].episodes
    matrix = {r["hop"]: r for r in _csv(seeded["out"], "c1-handoff-matrix")}
    drift = [e.outcome.measures["decision_drift"].get("crm_r2") for e in c1]
    assessed = [v for v in drift if v is not None]
    assert matrix["crm_r2"]["decision drift"].startswith(f"{sum(assessed)}/{len(assessed)} ")
    signal = [e for e in c1 if e.outcome.endpoints["drift_signal"]]
    stages = _csv(seeded["out"], "c1-interception")
    counts = [r["episodes / episodes with a drift signal"].split(" ")[0].split("/") for r in stages]
    assert sum(int(k) for k, _ in counts) == len(signal) and {n for _, n in counts} == {str(len(signal))}
    terminal = sum(bool(e.outcome.endpoints["terminal_drift"]) for e in c1)
    row = next((r for r in stages if r["stage"].startswith("not intercepted")), None)
    assert (int(row["episodes / episodes with a drift signal"].split("/")[0]) if row else 0) == terminal
    d1 = seeded["d1"].episodes
    atlas = _csv(seeded["out"], "d1-field-atlas")
    assert {r["domain"] for r in atlas} == {"hr", "finance", "security"}
    for r in atlas:
        eps = [e for e in d1 if e.spec.identity.fields["domain"] == r["domain"]]
        k = sum(r["field"] in e.outcome.measures["fields_final"] for e in eps)
        assert r["at the requester"].startswith(f"{k}/{len(eps)} " if eps else "no rate (none assessed)")
    assert sum(r["at the requester"].endswith("]") for r in atlas) > 0  # some domain has episodes


def test_attribution_tables_pool_models_side_by_side(seeded: dict[str, Any]) -> None:
    matched = [r for r in _csv(seeded["out"], "matched") if r["cell"] == "all"]
    assert [(r["model"], r["run"], r["targets"], r["ΔΔ"]) for r in matched] == [
        ("model-a", "ma", "3", "+0.500 [+0.500, +0.500]"),
        ("model-b", "mb", "3", "+1.500 [+1.500, +1.500]"),
    ]
    accuracy = next(
        r for r in _csv(seeded["out"], "accuracy") if r["condition"] == "base" and r["cell"] == "all"
    )
    assert accuracy["correct"].startswith(f"{accuracy['generations']}/{accuracy['generations']} 100.0%")
    degradation = next(r for r in _csv(seeded["out"], "degradation") if r["cell"] == "all")
    labels = [t.labels() for task in seeded["tasks"] for t in task.targets if t.kind.value == "tool"]
    n_rows = sum(lab.count("valid") for lab in labels)
    # fake decoder: mixed drops one factor (wrong), clean drops more (correct) only with an Invalid factor
    retained = sum(lab.count("valid") for lab in labels if "invalid" in lab)
    assert degradation["rows"] == str(n_rows) and degradation["c_F"].startswith(f"{n_rows}/{n_rows} ")
    assert degradation["retained-invalid (1,0,1)"].startswith(f"{retained}/{n_rows} ")
    screening = _csv(seeded["out"], "screening-12")
    assert [r["selector"] for r in screening] == ["first_order", "pairwise", "hybrid"]
    assert all(r["distractors kept / distractors present (Wilson 95%)"].startswith("0/8 ") for r in screening)
    coalition = _csv(seeded["out"], "coalition")
    assert {r["method"] for r in coalition} == {"harsanyi", "shapley", "full", "leave_one_out", "first_order"}
    assert {r["model"] for r in coalition} == {"fake"}
    assert {r["targets"] for r in coalition if r["cell"] == "all"} == {str(_with_invalid(seeded["tasks"]))}


def _with_invalid(tasks: list[Any]) -> int:
    return sum("invalid" in t.labels() for task in tasks for t in task.targets if t.kind.value == "tool")


def test_prediction_tables_join_the_coalition_run(seeded: dict[str, Any]) -> None:
    """Degradation rows of tool targets with an Invalid factor, counted from the labels here."""
    expected = sum(
        t.labels().count("valid")
        for task in seeded["tasks"]
        for t in task.targets
        if t.kind.value == "tool" and "invalid" in t.labels()
    )
    predictors = _csv(seeded["out"], "degradation_predictors")
    assert {r["run"] for r in predictors} == {"d1 + c1"}
    assert {r["rows"] for r in predictors} == {str(expected)} and expected > 0
    rescue = _csv(seeded["out"], "rescue_prediction")
    assert {r["run"] for r in rescue} == {"g1 + c1"}


def test_repair_retest_row_states_both_cohorts(seeded: dict[str, Any]) -> None:
    r = seeded["retest"]
    (row,) = _csv(seeded["out"], "repair-retest")
    assert row["repair"] == r.repair_id and row["world"] == "A1"
    assert (
        row["episodes (retest / baseline)"] == f"{len(r.cohort.episode_ids)} / {len(r.baseline.episode_ids)}"
    )
    assert row["retest rate"].startswith(f"{r.target.successes}/{r.target.total} ")
    assert row["baseline rate"].startswith(f"{r.baseline_target.successes}/{r.baseline_target.total} ")
    assert row["decision"] == "not decided"


def test_figures_are_written(seeded: dict[str, Any]) -> None:
    pngs = {p.name for p in seeded["out"].glob("*.png")}
    assert pngs == {
        "matched.png",
        "world-A1-endpoints.png",
        "world-C1-endpoints.png",
        "world-D1-endpoints.png",
        "world-F1-endpoints.png",
        "world-matrix.png",
        "repair-retest.png",
    }
    assert all((seeded["out"] / p).stat().st_size > 1000 for p in pngs)


def test_rerun_replaces_the_set_whole(seeded: dict[str, Any]) -> None:
    out = seeded["out"]
    (out / "stale.csv").write_text("left from an earlier set\n")
    env = {"AUDITOR_STORE": seeded["url"]}
    result = CliRunner().invoke(app, ["evidence", "report", "--out", str(out), "--resamples", "100"], env=env)
    assert result.exit_code == 0, result.output
    assert not (out / "stale.csv").exists() and (out / "evidence.md").exists()
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".evidence")]


def test_builders_read_the_store_directly(seeded: dict[str, Any]) -> None:
    seen: list[str] = []
    tables = build_tables(Evidence(seeded["store"], RESAMPLES), seen.append)
    assert [t.key for t in tables] == [t["key"] for t in seeded["json"]["tables"]]
    assert seen[0] == "matched interventions" and seen[-1] == "workload"


def test_user_errors_are_one_line(tmp_path: Path) -> None:
    """An empty store and an --out that is a file: one line on stderr, exit code 2, nothing written."""
    (tmp_path / "file").write_text("x")
    for args, message in (
        (["evidence", "report"], "the store holds no events"),
        (["evidence", "report", "--out", "file"], "file: exists and is not a folder"),
    ):
        done = run_cli(["--store", "sqlite:///empty.db", *args], tmp_path)
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith(f"error: {message}") and done.stderr.count("\n") == 1
    assert not (tmp_path / "evidence").exists()


def test_a_started_run_without_targets_keeps_every_table(sqlite_store) -> None:  # type: ignore[no-untyped-def]
    start_run(sqlite_store, "empty", {"dataset": "agentaudit", "model": "m", "experiment": "coalition"})
    tables = {t.key: t for t in build_tables(Evidence(sqlite_store, n_resamples=100))}
    for key in ("control-content-null", "control-role", "coarsening-source", "coarsening-type"):
        assert tables[key].rows == [] and tables[key].empty is None  # a run exists; it has no rows yet
    assert tables["workload"].rows[0][:6] == ["empty", "coalition", "m", "agentaudit", "0", "0"]

"""Generated-action statistics on constructed generations whose answers are counted by hand, and
the rescue-prediction study on constructed games whose answer is a perfect separation."""

from __future__ import annotations

import numpy as np
import pytest

from scoring.action_contexts import DROP, DROP_U
from scoring.action_stats import summarise_generations
from scoring.generation_report import NA, generation_tables, prediction_table, write_csvs
from scoring.rescue_prediction import predict_rescue, rescue_cohort
from scoring.runs import SCORE_FIELDS, GeneratedAction, ScoredTarget

# target → condition → (value, correct, competitor_match); None value = absent / malformed.
R, C = "ref", "comp"
PLAN: dict[tuple[str, str, str], dict[str, tuple[str | None, bool, bool | None]]] = {
    ("t1", "tool", "tool"): {
        "T_S": (R, True, None), "U_S": (R, True, None),
        "T_C": (C, False, True), "U_C": (R, True, None),
        "flip_U": (R, True, None), "flip_T": (C, False, True),
        "base": (R, True, None), "drop": ("w", False, None), "drop_U": ("w", False, None),
    },
    ("t1", "slot:x", "slot"): {
        "T_S": (R, True, None), "U_S": ("other", False, None),
        "T_C": (C, False, True), "U_C": (C, False, True),
        "flip_U": ("w", False, False), "flip_T": ("w", False, False),
        "base": ("w", False, None), "drop": ("w", False, None), "drop_U": (R, True, None),
    },
    ("t2", "tool", "tool"): {
        "T_S": ("w1", False, None), "U_S": ("w2", False, None),
        "T_C": ("z", False, False), "U_C": (R, True, None),
        "flip_U": (R, True, None), "flip_T": (R, True, None),
        "base": ("w", False, None), "drop": (R, True, None), "drop_U": (R, True, None),
    },
    ("t2", "slot:x", "slot"): {  # no Invalid factor: no authority flip
        "T_S": (None, False, None), "U_S": (None, False, None),
        "T_C": (R, True, None), "U_C": (R, True, None),
        "base": ("w", False, None), "drop": ("w", False, None), "drop_U": (R, True, None),
    },
}  # fmt: skip


def rows() -> list[GeneratedAction]:
    return [
        GeneratedAction(task, target, kind, "s", cond, "", value is not None, value, correct, match)
        for (task, target, kind), conds in PLAN.items()
        for cond, (value, correct, match) in conds.items()
    ]


def frac(r) -> tuple[int, int] | None:  # type: ignore[no-untyped-def]
    return None if r is None else (r.successes, r.total)


@pytest.fixture(scope="module")
def summary():  # type: ignore[no-untyped-def]
    return summarise_generations(rows(), n_resamples=200)


def test_discordance_and_transitions(summary) -> None:  # type: ignore[no-untyped-def]
    got = {(c.relation, c.cell): c for c in summary.changes}
    s, c = got[("support", "all")], got[("competition", "all")]
    assert s.n_pairs == c.n_pairs == 4
    assert frac(s.discordant) == (2, 4)  # t1/slot changes value and t2/tool two wrong values; absent = absent
    assert frac(s.correct_to_wrong) == (1, 4) and frac(s.wrong_to_correct) == (0, 4)
    assert (s.mcnemar.b, s.mcnemar.c, s.mcnemar.p_value) == (1, 0, 1.0)
    assert frac(c.discordant) == (2, 4)
    assert frac(c.correct_to_wrong) == (0, 4) and frac(c.wrong_to_correct) == (2, 4)
    assert (c.mcnemar.b, c.mcnemar.c, c.mcnemar.p_value) == (0, 2, 0.5)
    assert frac(got[("support", "tool")].discordant) == (1, 2)
    assert frac(got[("competition", "slot")].discordant) == (0, 2)


def test_competition_minus_support_contrast(summary) -> None:  # type: ignore[no-untyped-def]
    all_ = next(c for c in summary.contrast if c.cell == "all")
    assert all_.n_targets == 4 and all_.difference == 0.0
    assert (all_.mcnemar.b, all_.mcnemar.c) == (1, 1)  # t1/tool changes only under C, t1/slot only under S
    assert all_.interval is not None and all_.interval.n_clusters == 2
    tool = next(c for c in summary.contrast if c.cell == "tool")
    assert tool.difference == 0.5 and tool.interval is not None  # C: both tool targets change; S: one


def test_competitor_matching_counts_only_incorrect(summary) -> None:  # type: ignore[no-untyped-def]
    got = {(m.condition, m.cell): m for m in summary.competitors}
    assert got[("T_C", "all")].n_incorrect == 3 and frac(got[("T_C", "all")].matched) == (2, 3)
    assert frac(got[("U_C", "all")].matched) == (1, 1)
    assert frac(got[("flip_T", "all")].matched) == (1, 2)
    assert got[("U_C", "tool")].n_incorrect == 0 and got[("U_C", "tool")].matched is None  # no rate, not 0


def test_authority_flip(summary) -> None:  # type: ignore[no-untyped-def]
    f = next(x for x in summary.flips if x.cell == "all")
    assert f.n_targets == 3  # the target without an Invalid factor has no flip
    assert frac(f.u_miss) == (1, 3) and frac(f.t_miss) == (2, 3)
    assert frac(f.u_to_t_switch) == (1, 3) and frac(f.t_competitor) == (1, 2)
    assert (f.mcnemar.b, f.mcnemar.c) == (1, 0)
    slot = next(x for x in summary.flips if x.cell == "slot")
    assert slot.n_targets == 1 and frac(slot.t_competitor) == (0, 1)


def test_rescue_rates_over_all_targets_and_over_base_errors(summary) -> None:  # type: ignore[no-untyped-def]
    got = {(r.arm, r.cell): r for r in summary.rescues}
    trusted = got[("factorial support, trusted", "all")]
    assert frac(trusted.base_errors) == (3, 4) and frac(trusted.rescued) == (1, 4)
    assert frac(trusted.rescued_of_errors) == (1, 3)
    assert frac(got[("factorial support, untrusted", "all")].rescued_of_errors) == (0, 3)  # a defined zero
    assert frac(got[("support arm, trusted restore", "all")].rescued) == (1, 4)
    note = got[("support arm, untrusted note", "all")]
    assert frac(note.rescued) == (2, 4) and frac(note.rescued_of_errors) == (2, 3)
    tool_note = got[("support arm, untrusted note", "tool")]
    assert frac(tool_note.base_errors) == (1, 2) and frac(tool_note.rescued_of_errors) == (0, 1)


def test_accuracy_counts_malformed(summary) -> None:  # type: ignore[no-untyped-def]
    got = {(a.condition, a.cell): a for a in summary.accuracy}
    assert frac(got[("T_S", "all")].correct) == (2, 4) and frac(got[("T_S", "all")].malformed) == (1, 4)
    assert got[("flip_U", "slot")].n == 1


def test_empty_cohorts_have_no_rate() -> None:
    only_tool = [r for r in rows() if r.kind == "tool"]
    s = summarise_generations(only_tool, n_resamples=200)
    slot = [c for c in s.changes if c.cell == "slot"]
    assert all(c.n_pairs == 0 and c.discordant is None and c.mcnemar is None for c in slot)
    assert next(c for c in s.contrast if c.cell == "slot").difference is None
    no_errors = [r for r in rows() if r.target_key == "t2/tool" and r.condition in ("drop", "drop_U")]
    arm = next(
        r
        for r in summarise_generations(no_errors).rescues
        if r.arm == "support arm, untrusted note" and r.cell == "all"
    )
    assert frac(arm.base_errors) == (0, 1) and arm.rescued_of_errors is None


def test_tables_state_denominators_and_write_csv(summary, tmp_path) -> None:  # type: ignore[no-untyped-def]
    tables = generation_tables(summary)
    assert [t.name for t in tables] == ["accuracy", "discordance", "contrast", "competitor", "flip", "rescue"]
    disc = next(t for t in tables if t.name == "discordance")
    row = next(r for r in disc.rows if r[:2] == ["support", "all"])
    assert row[3].startswith("2/4 50.0% [")
    comp = next(t for t in tables if t.name == "competitor")
    assert next(r for r in comp.rows if r[:2] == ["U_C", "tool"])[3] == NA
    paths = write_csvs(tables, tmp_path, "r")
    assert len(paths) == 6 and paths[0].read_text().startswith("condition,cell,generations,correct,malformed")


def additive_target(task: str, kind: str, invalid_weight: float, labels: list[str]) -> ScoredTarget:
    """v(S) = Σ_{i∈S} d_i: the invalid factor's dividend is ``invalid_weight``, the others 1."""
    d = np.array([invalid_weight if lab == "invalid" else 1.0 for lab in labels])
    game = np.array([d[[i for i in range(8) if m >> i & 1]].sum() for m in range(256)])
    return ScoredTarget(task, kind, kind, "retail", labels, np.arange(256), {f: game for f in SCORE_FIELDS})


def support_arm(task: str, kind: str, base_correct: bool, rescued: bool) -> list[GeneratedAction]:
    return [
        GeneratedAction(task, kind, kind, "retail", DROP, "", True, "v", base_correct, None),
        GeneratedAction(task, kind, kind, "retail", DROP_U, "", True, "v", rescued, None),
    ]


def test_rescue_prediction_separates_by_invalid_share() -> None:
    pytest.importorskip("sklearn")
    labels = ["valid", "invalid", *["neutral"] * 6]
    scored, gens = [], []
    for t in range(20):  # rescued exactly when the invalid dividend is small (a low invalid share)
        rescued = t % 2 == 0
        kind = "tool" if t % 4 < 2 else "slot"
        scored.append(additive_target(f"t{t}", kind, 0.1 + t / 100 if rescued else 10 + t, labels))
        gens += support_arm(f"t{t}", kind, False, rescued)
    scored.append(additive_target("ok", "tool", 1.0, labels))  # base correct: not in the cohort
    gens += support_arm("ok", "tool", True, True)
    scored.append(additive_target("clean", "tool", 1.0, ["valid", *["neutral"] * 7]))  # no Invalid factor
    gens += support_arm("clean", "tool", False, True)
    rows = rescue_cohort(gens, scored)
    assert len(rows) == 20 and {r.task_id for r in rows} == {f"t{t}" for t in range(20)}
    got = {p.features: p for p in predict_rescue(rows)}
    assert got["empty Harsanyi"].auroc == 1.0 and got["empty Harsanyi"].ap == pytest.approx(1.0)
    assert got["leave-one-out"].auroc == 1.0  # an additive game: deletion sees the same shares
    assert got["dataset/target kind"].auroc is not None and got["dataset/target kind"].auroc < 0.9
    assert frac(got["empty Harsanyi"].rescued) == (10, 20) and got["empty Harsanyi"].n_tasks == 20
    few = predict_rescue(rows[:8])  # four targets of each outcome: no five stratified folds
    assert all(p.auroc is None and p.ap is None for p in few) and frac(few[0].rescued) == (4, 8)
    assert prediction_table(few).rows[2][3:] == ["4/8 50.0% [21.5%, 78.5%]", NA, NA]
    assert prediction_table(list(got.values())).rows[2][4:] == ["1.000", "1.000"]
    assert all(p.auroc is None for p in predict_rescue([r for r in rows if r.rescued]))  # one outcome
    assert all(p.auroc is not None for p in predict_rescue(rows[:10] + rows[12:]))  # five of each suffice
    assert predict_rescue([])[0].rescued is None

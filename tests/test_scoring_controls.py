"""The robustness controls (seed §15.2–15.4, §15.7–15.9): constructed cases with known answers, then
each control end to end through `auditor score run` / `auditor score report` on the tiny model."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from auditor.core.errors import AuditorError
from auditor.surfaces.cli.main import app
from schemas.attribution import AttributionLabel
from scoring.coalition import label_masks
from scoring.coarsening import GROUPINGS, coarsen_game, factor_groups, merged_labels
from scoring.comparison import PairedShare, compare_cells, comparison_table_rows
from scoring.construction import (
    invalid_anywhere,
    no_invalid_task,
    placeholder_mask,
    placeholder_masks,
    placeholder_parts,
    shuffle_order,
    shuffled_task,
)
from scoring.datasets import BUILDERS, build_dataset
from scoring.matching import (
    READINGS,
    candidate_tiers,
    first_order_salience,
    match_controls,
    matched_control_summary,
)
from scoring.nulls import bucket_groups, content_labelings, content_null_shares
from scoring.prompts import factor_line, query_text, scaffold_text
from scoring.runs import SCORE_FIELDS, ScoredTarget, read_run, start_run
from scoring.transforms import moebius, shapley_interaction

N = 8


def permuted_game(game: np.ndarray, order: list[int]) -> np.ndarray:
    """The game seen through a presentation order: new position p holds original factor order[p]."""
    out = np.empty_like(game)
    for new in range(game.size):
        out[new] = game[sum(1 << order[p] for p in range(N) if new >> p & 1)]
    return out


def test_content_preserving_shuffle_leaves_content_null_unchanged() -> None:
    task = build_dataset("agentaudit")[0]
    target = task.targets[1]  # slot:recipient: two Invalid factors in different buckets
    game = np.random.default_rng(5).normal(size=1 << N)
    key = task.target_key(target)
    before = content_null_shares(game, target.labels(), task.factors, target_key=key, n_perm=200)
    moved = shuffled_task(task, 1)
    order = shuffle_order(task.task_id, 1, N)
    assert [f.factor_id for f in moved.factors] == [task.factors[i].factor_id for i in order]
    assert moved.targets[1].labels() == [target.labels()[i] for i in order]
    after = content_null_shares(
        permuted_game(game, order), moved.targets[1].labels(), moved.factors, target_key=key, n_perm=200
    )
    for field in ("s_frac", "s_any"):
        assert after.observed[field] == pytest.approx(before.observed[field], abs=1e-12)
        np.testing.assert_allclose(after.null_samples[field], before.null_samples[field], atol=1e-12)
    assert before.excess["s_frac"] == pytest.approx(after.excess["s_frac"], abs=1e-12)


def test_content_null_permutes_only_within_buckets() -> None:
    task = build_dataset("agentaudit")[0]
    groups = bucket_groups(task.factors)
    labels = task.targets[1].labels()
    rows = content_labelings(labels, groups, "k", 300, 17)
    for inv, _, _ in rows:  # each bucket keeps its number of Invalid labels
        for g in groups:
            assert sum(inv >> i & 1 for i in g) == sum(labels[i] == "invalid" for i in g)
    assert len({tuple(r) for r in rows}) > 1  # identifier bucket (f2, f5, f6) mixes labels
    uniform = ["invalid" if task.factors[i].bucket.value == "identifier" else "neutral" for i in range(N)]
    assert (content_labelings(uniform, groups, "k", 50, 17) == label_masks(uniform)).all()


def test_coarsening_of_additive_game_has_no_interaction_mass() -> None:
    task = build_dataset("bfclaudit")[0]
    weights = np.arange(1.0, N + 1)
    additive = np.array([3.0 + sum(weights[i] for i in range(N) if s >> i & 1) for s in range(1 << N)])
    for grouping in GROUPINGS:
        groups = factor_groups(task.factors, grouping)
        assert sum(groups) == (1 << N) - 1 and len(groups) < N
        coarse = coarsen_game(additive, groups)
        for coefs in (moebius(coarse), shapley_interaction(coarse)):
            higher = [m for m in range(1, coarse.size) if m.bit_count() >= 2]
            assert np.abs(coefs[higher]).max() < 1e-9
            singles = [coefs[1 << j] for j in range(len(groups))]
            np.testing.assert_allclose(
                singles, [sum(weights[i] for i in range(N) if g >> i & 1) for g in groups]
            )
    game = np.random.default_rng(1).normal(size=1 << N)
    groups = factor_groups(task.factors, "type")
    coarse = coarsen_game(game, groups)
    assert coarse[0b101] == game[groups[0] | groups[2]]  # the restriction to unions of groups


def test_merged_labels_follow_the_rule() -> None:
    labels = ["neutral", "valid", "invalid", "neutral", "valid", "neutral", "excluded", "neutral"]
    groups = [0b00000111, 0b00011000, 0b01100000, 0b10000000]
    assert merged_labels(labels, groups) == ["invalid", "valid", "neutral", "neutral"]


def test_placeholder_masks_pick_one_of_each_pair_and_build_the_prompt() -> None:
    masks = placeholder_masks(N)
    assert len(set(masks)) == 1 << N
    for subset, mask in enumerate(masks):
        for i in range(N):
            factor, placeholder = mask >> 2 * i & 1, mask >> 2 * i + 1 & 1
            assert factor + placeholder == 1 and factor == subset >> i & 1
    task = build_dataset("tau2audit")[0]
    parts = placeholder_parts(task)
    subset = 0b10100101
    lines = [factor_line(f.text if subset >> i & 1 else f.placeholder) for i, f in enumerate(task.factors)]
    expected = scaffold_text(task) + "".join(lines) + query_text(task.targets[2])
    assert parts.prompt(placeholder_mask(subset, N), 2) == expected
    assert "[policy entry withheld]" in parts.prompt(placeholder_mask(0, N), 0)


def test_salience_matching_picks_the_nearest() -> None:
    game = np.zeros(1 << 5)
    game[0] = 1.0
    for i, v in enumerate([1.5, 4.0, 2.0, 3.9, 1.1]):
        game[1 << i] = v
    salience = first_order_salience(game)
    np.testing.assert_allclose(salience, [0.5, 3.0, 1.0, 2.9, 0.1])
    pool = {j: 0 for j in (0, 2, 3)}
    assert match_controls([1], [pool], salience) == ([3], 0)
    assert match_controls([1, 4], [pool, pool], salience) == ([3, 0], 0)  # one-to-one
    tiers = {0: 1, 2: 0, 3: 1}  # a preferred pool beats a nearer fallback
    assert match_controls([1], [tiers], salience) == ([2], 0)
    assert match_controls([1, 4], [tiers, tiers], salience) == ([3, 2], 1)
    assert match_controls([1, 4, 0], [{2: 0}] * 3, salience) is None


def additive_target(weights: list[float]) -> tuple[Any, ScoredTarget]:
    """agentaudit task 0's slot:recipient (Invalid f4, f6; competitor f2) on an additive game."""
    task = build_dataset("agentaudit")[0]
    target = task.targets[1]
    game = np.array([sum(weights[i] for i in range(N) if s >> i & 1) for s in range(1 << N)])
    scored = ScoredTarget(
        task.task_id,
        target.target_id,
        "slot",
        task.setting,
        target.labels(),
        np.arange(1 << N),
        {f: game for f in SCORE_FIELDS},
    )
    return task, scored


def test_matched_controls_on_an_additive_game() -> None:
    """Only singletons carry strength, so each share is the matched factors' weight over the total."""
    weights = [1.0, 2.0, 8.0, 3.0, 5.0, 4.0, 0.5, 6.5]
    task, scored = additive_target(weights)
    assert candidate_tiers("role", task, task.targets[1], 4)[2] == 0  # the authorized competitor
    tasks = {task.task_id: task}
    salience = matched_control_summary("salience", [scored], tasks, n_resamples=100)
    row = next(
        r for r in salience.rows if r.estimand == "shapley" and r.field == "s_frac" and r.cell == "all"
    )
    assert row.observed == pytest.approx(5.5 / 30) and row.baseline == pytest.approx(5.0 / 30)  # f5, f0
    assert not row.reverses and salience.n_fallbacks == 0
    role = matched_control_summary("role", [scored], tasks, n_resamples=100)
    row = next(r for r in role.rows if r.estimand == "harsanyi" and r.field == "s_any" and r.cell == "slot")
    assert row.baseline == pytest.approx(9.0 / 30) and row.reverses  # f2 (competitor) and f0
    assert (role.n_matches, role.n_fallbacks) == (2, 1)
    printed = comparison_table_rows(role.rows, READINGS["role"])
    assert {r[-1] for r in printed} == {"boundary condition (reverses)"}


def test_no_invalid_rewrite_keeps_sources_and_removes_every_competitor() -> None:
    n_rewritten = 0
    for name in BUILDERS:
        for task in build_dataset(name)[:25]:
            rewritten = no_invalid_task(task)
            assert rewritten is not None
            changed = set(invalid_anywhere(task))
            n_rewritten += len(changed)
            for i, (old, new) in enumerate(zip(task.factors, rewritten.factors, strict=True)):
                assert (new.factor_id, new.source_type, new.placeholder) == (
                    old.factor_id,
                    old.source_type,
                    old.placeholder,
                )
                assert new.text == (old.noncompeting_rewrite if i in changed else old.text)
            for old_t, new_t in zip(task.targets, rewritten.targets, strict=True):
                assert AttributionLabel.invalid.value not in new_t.labels()
                assert new_t.target_string == old_t.target_string
                for i in changed:
                    value = old_t.judgments[i].competing_value
                    if value:
                        pattern = r"(?<!\w)" + re.escape(value.lower()) + r"(?!\w)"
                        assert not re.search(pattern, rewritten.factors[i].text.lower()), (
                            task.task_id,
                            value,
                        )
    assert n_rewritten > 100


def test_compare_cells_reads_differences_and_tasks() -> None:
    pairs = [
        PairedShare("a", "tool", 0.5, 0.2),
        PairedShare("a", "slot", 0.4, 0.5),
        PairedShare("b", "slot", 0.3, 0.1),
    ]
    rows = {
        r.cell: r for r in compare_cells("x", "shapley", "s_frac", pairs, n_resamples=200, with_spearman=True)
    }
    assert rows["all"].difference == pytest.approx(0.4 / 3) and rows["all"].n_tasks == 2
    assert rows["tool"].ci is None and rows["slot"].n_targets == 2
    assert rows["all"].spearman == pytest.approx(0.5)


# End to end on the CPU: the tiny random model through `auditor score run` and `auditor score report`.

torch = pytest.importorskip("torch")
from tests.test_scoring_runs import ByteTokenizer, tiny_model  # noqa: E402, F401


@pytest.fixture
def cli(sqlite_store, tiny_model, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]  # noqa: F811
    from auditor.core.local_model import LoadedModel

    lm = LoadedModel("tiny", tiny_model, ByteTokenizer(), "cpu", "float32")
    monkeypatch.setattr("auditor.surfaces.cli.score_cmd.open_cli_store", lambda: sqlite_store)
    monkeypatch.setattr("auditor.core.local_model.load_model", lambda *a, **k: lm)

    def invoke(*args: str) -> Any:
        return CliRunner().invoke(app, list(args))

    invoke.store = sqlite_store  # type: ignore[attr-defined]
    return invoke


RUN = ("score", "run", "--dataset", "agentaudit", "--model", "tiny", "--limit", "2", "--target-kind", "tool")


def report_json(cli: Any, run_id: str, tmp_path: Path, *extra: str) -> dict[str, Any]:
    result = cli("score", "report", run_id, "--out", str(tmp_path), "--resamples", "200", "--json", *extra)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def rows_of(table: list[dict[str, str]], estimand: str, cell: str, share: str) -> dict[str, str]:
    return next(
        r
        for r in table
        if r.get("estimand", r.get("method")) == estimand and r["cell"] == cell and r["share"] == share
    )


def test_every_control_end_to_end(cli: Any, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    store = cli.store
    assert cli(*RUN).exit_code == 0
    base = "agentaudit-tiny-coalition"
    data = report_json(cli, base, tmp_path, "--controls")
    controls = data["controls"]
    assert set(controls) == {
        "control-content-null",
        "control-salience",
        "control-value-bearing",
        "control-role",
        "coarsening-source",
        "coarsening-source-type",
        "coarsening-type",
    }
    main = rows_of(data["rows"], "shapley", "all", "s_frac")
    for name in ("control-content-null", "control-salience", "control-role"):  # same observed share
        assert rows_of(controls[name], "shapley", "all", "s_frac")["observed"] == main["observed"]
    assert (tmp_path / f"{base}-control-role.csv").exists()

    for shuffle in ("1", "2"):
        assert cli(*RUN, "--experiment", "order-shuffle", "--shuffle", shuffle).exit_code == 0
    _, shuffled = read_run(store, "agentaudit-tiny-order-shuffle-1")
    first = next(shuffled)
    moved = shuffled_task(build_dataset("agentaudit")[0], 1)
    assert first.labels == moved.targets[0].labels()
    paired = report_json(cli, "agentaudit-tiny-order-shuffle-2", tmp_path)["controls"]["paired-order-shuffle"]
    row = rows_of(paired, "shapley", "all", "s_frac")
    assert row["targets"] == "2" and row["baseline"] == main["observed"]
    with_controls = report_json(cli, "agentaudit-tiny-order-shuffle-1", tmp_path, "--controls")["controls"]
    assert "paired-order-shuffle" in with_controls and "coarsening-type" in with_controls

    assert cli(*RUN, "--experiment", "placeholder").exit_code == 0
    _, original = read_run(store, base)
    _, masked = read_run(store, "agentaudit-tiny-placeholder")
    for a, b in zip(original, masked, strict=True):
        full = (1 << N) - 1
        assert a.game()[full] == pytest.approx(b.game()[full], abs=1e-4)  # nothing omitted: same prompt
        assert abs(a.game()[0] - b.game()[0]) > 1e-6  # all omitted: placeholders instead of nothing
    assert "paired-placeholder" in report_json(cli, "agentaudit-tiny-placeholder", tmp_path)["controls"]

    assert cli(*RUN, "--experiment", "no-invalid").exit_code == 0
    _, rewritten = read_run(store, "agentaudit-tiny-no-invalid")
    assert all("invalid" not in t.labels for t in rewritten)
    data = report_json(cli, "agentaudit-tiny-no-invalid", tmp_path)
    assert data["without_invalid"] == data["n_targets"] == 2
    row = rows_of(data["controls"]["paired-no-invalid"], "full", "all", "s_any")
    assert (
        row["targets"] == "2"
        and row["baseline"] == rows_of(data_of(cli, base, tmp_path), "full", "all", "s_any")["observed"]
    )


def data_of(cli: Any, run_id: str, tmp_path: Path) -> list[dict[str, str]]:
    return report_json(cli, run_id, tmp_path)["rows"]


def test_bad_control_input_is_one_line(cli: Any, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    def fails(*args: str) -> str:
        result = cli(*args)
        assert result.exit_code != 0 and isinstance(result.exception, AuditorError), result.output
        return str(result.exception)

    assert "unknown shuffle 3" in fails(*RUN, "--experiment", "order-shuffle", "--shuffle", "3")
    assert cli(*RUN, "--limit", "1", "--experiment", "placeholder").exit_code == 0
    out = tmp_path / "failed-report"
    assert "no scoring run 'agentaudit-tiny-coalition'" in fails(
        "score", "report", "agentaudit-tiny-placeholder", "--out", str(out)
    )
    assert not out.exists()  # the failing paired control stopped the report before it wrote anything
    assert cli(*RUN, "--limit", "1").exit_code == 0
    assert "has experiment 'placeholder'" in fails(
        "score", "report", "agentaudit-tiny-placeholder", "--coalition-run", "agentaudit-tiny-placeholder"
    )
    start_run(cli.store, "g1", {"dataset": "agentaudit", "model": "tiny", "experiment": "generation"})
    assert "--controls applies to coalition-shaped runs" in fails("score", "report", "g1", "--controls")
    assert "--coalition-run applies" in fails(
        "score", "report", "agentaudit-tiny-coalition", "--coalition-run", "x"
    )


def test_placeholder_trie_matches_naive_on_smollm2(smollm2) -> None:  # type: ignore[no-untyped-def]
    """The real tokenizer keeps the 2n pieces apart, and the trie scores them as naive scoring does."""
    from scoring.scorer import TrieScorer, naive_scores, tokenize_parts

    task = build_dataset("agentaudit")[0]
    tok = tokenize_parts(smollm2.tokenizer, placeholder_parts(task, task.targets[:1]))
    subsets = [0, 0b00100101]
    naive = naive_scores(smollm2.model, tok, [placeholder_mask(s, N) for s in subsets], [0])[0]
    trie = TrieScorer(smollm2.model)
    got = trie.score(tok, masks=[placeholder_mask(s, N) for s in subsets])[0]
    np.testing.assert_allclose(got.sum_logodds, naive.sum_logodds, atol=1e-3)

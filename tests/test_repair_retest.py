"""Retest, decision and PR: fresh identities only, the approved artifact only, all four conditions."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from auditor.core.errors import ContractError, VerificationFailed
from repair.retest import RetestPlan, run_retest
from repair.service import decide_step, open_repair, pr_step, propose_step, retest_step, review_step
from repair.stream import load_repair
from tests.repair_support import open_audited_repair
from worlds import Workflow, get_world

SMALL = RetestPlan(episodes=6, seed=20_000)


def test_retest_refuses_identities_an_audited_episode_used(sqlite_store) -> None:
    repair_id = open_audited_repair(sqlite_store, "A1")
    propose_step(sqlite_store, repair_id)
    state = review_step(sqlite_store, repair_id)
    audited = state.context.audited_identity_keys[0]
    world = get_world("A1")
    reused = next(world.identity(i) for i in range(200) if world.identity(i).key == audited)
    fresh = world.fresh_identities(5, exclude=state.context.audited_identity_keys, seed=7)
    with pytest.raises(ContractError, match=audited):
        run_retest(sqlite_store, state, SMALL, identities=[*fresh, reused])


def test_retest_needs_an_approved_artifact_and_an_unchanged_source(sqlite_store) -> None:
    repair_id = open_audited_repair(sqlite_store, "A1")
    propose_step(sqlite_store, repair_id)
    with pytest.raises(ContractError, match="no approved artifact"):
        retest_step(sqlite_store, repair_id, SMALL)
    state = review_step(sqlite_store, repair_id)
    moved = state.context.__class__(
        **{**state.context.__dict__, "source_digest": "0" * 64, "report_id": "rpt-x"}
    )
    other = open_repair(sqlite_store, moved)
    propose_step(sqlite_store, other)
    review_step(sqlite_store, other)
    with pytest.raises(VerificationFailed, match="source changed"):
        retest_step(sqlite_store, other, SMALL)


def test_repair_that_fixes_safety_but_blocks_all_payments_is_rejected(sqlite_store, tmp_path: Path) -> None:
    """A cap of one cent stops the cumulative failure by refusing every credit: rejected, never retested."""
    repair_id = open_audited_repair(sqlite_store, "A1")
    propose_step(sqlite_store, repair_id, {"shared_cumulative_check": {"cap_usd": 0.01}})
    state = review_step(sqlite_store, repair_id, max_rounds=1)
    world = get_world("A1")
    artifact = Workflow.from_yaml(state.latest.patched_yaml, "artifact")
    fresh = world.fresh_identities(4, exclude=state.context.audited_identity_keys, seed=3)
    runs = [
        world.run_episode("strong", 40 + i, ident, world.scripted(), artifact)
        for i, ident in enumerate(fresh)
    ]
    assert not any(r.outcome.target_fired for r in runs)  # safety "fixed" …
    assert all(r.outcome.measures["total_paid_usd"] <= 0.01 for r in runs)  # … by paying a cent at most
    review = state.latest.review
    assert not review.approved and review.proportionality.verdict.value == "fail"
    assert "refuses permitted credits" in review.proportionality.rationale
    with pytest.raises(ContractError, match="no approved artifact"):
        retest_step(sqlite_store, repair_id, SMALL)
    decision = decide_step(sqlite_store, repair_id)
    assert not decision.accepted and decision.scope_ok and not decision.review_ok
    assert not decision.audit_pass and not decision.retain_ok and decision.retain is None
    with pytest.raises(ContractError, match="not accepted"):
        pr_step(sqlite_store, repair_id, tmp_path)


def test_static_approval_is_not_acceptance_the_retest_states_everything(sqlite_store) -> None:
    """A binding no caller supplies passes static review; the retest states cohort, findings and costs."""
    repair_id = open_audited_repair(sqlite_store, "A1")
    blocking = {"require_bindings": ["customer_id", "quarter", "authority", "supervisor_code"]}
    propose_step(sqlite_store, repair_id, {"shared_cumulative_check": blocking})
    state = review_step(sqlite_store, repair_id)
    assert state.latest.review.approved  # static review cannot see that callers never send the code
    assert "supervisor_code" in state.latest.review.proportionality.rationale
    result = retest_step(sqlite_store, repair_id, SMALL)
    cohort = result.cohort
    assert sum(cohort.conditions.values()) == SMALL.episodes == len(cohort.episode_ids)
    assert cohort.seeds == list(range(SMALL.seed, SMALL.seed + SMALL.episodes))
    assert (
        cohort.policy_digest == state.context.policy_digest
        and cohort.source_digest == state.context.source_digest
    )
    assert cohort.workflow_digest == state.latest.patch.patched_digest != result.baseline.workflow_digest
    assert result.baseline.perturbation.startswith("none")
    assert result.retain == pytest.approx(result.utility_after / result.utility_baseline)
    assert {m.unit for m in result.costs} >= {"s", "s/episode", "steps/episode"}
    assert all(b.classification != "unresolved" or b.disposition == "realized" for b in result.beyond_label)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_accepted_repair_becomes_an_unmerged_branch_with_one_commit(sqlite_store, tmp_path: Path) -> None:
    from repair.pr import ensure_config_repo

    repair_id = open_audited_repair(sqlite_store, "A1")
    propose_step(sqlite_store, repair_id)
    review_step(sqlite_store, repair_id)
    result = retest_step(sqlite_store, repair_id, RetestPlan(episodes=8, seed=30_000))
    assert result.target.successes == 0 and result.retain >= 0.95
    assert not set(result.cohort.identity_keys) & set(
        load_repair(sqlite_store, repair_id).context.audited_identity_keys
    )
    assert result.baseline.identity_keys == result.cohort.identity_keys  # paired, stated baseline
    assert decide_step(sqlite_store, repair_id).accepted
    repo = tmp_path / "configs"
    text = (Path(__file__).parents[1] / "worlds" / "a1" / "workflow.yaml").read_text()
    ensure_config_repo(repo, get_world("A1").workflow(), text)
    main_before = _git(repo, "rev-parse", "main")
    pr = pr_step(sqlite_store, repair_id, repo)
    assert _git(repo, "rev-parse", "main") == main_before and pr.merged is False
    assert _git(repo, "rev-list", "--count", f"main..{pr.branch}") == "1"
    diff = _git(repo, "diff", "main", pr.branch)
    assert (
        "-      enabled: false" in diff and "+      enabled: true" in diff and "# Off in the audited" in text
    )
    assert _git(repo, "status", "--porcelain") == ""
    for part in ("## Finding", pr.file, "risk resolution", "Wilson 95% CI", "Retain", "Not merged"):
        assert part in pr.description or part == pr.file
    types = [e.type for e in sqlite_store.read_stream(f"repair-{repair_id}")]
    assert types == [
        "RepairOpened",
        "RepairProposed",
        "RepairReviewed",
        "RetestCompleted",
        "RepairDecided",
        "PRProposed",
    ]
    assert pr_step(sqlite_store, repair_id, repo).commit == pr.commit  # proposed once

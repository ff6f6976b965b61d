"""The authority and routing detectors against the micro-worlds' ground truth (scripted policy).

- B1 (authority): an official record attributing the incident to the vendor (``vendor_attribution``)
  against any authority-without-evidence finding, per condition (A, B and H carry no authority: the
  claim there comes from an unlabeled reporter, an intern or an engineer without power).
- F1 (routing): ``misrouting`` against the misrouting shape, and ``provenance_to_approval`` = False
  against the reviewer-identity shape; a finding is realized exactly when the contract was signed.
- C1 (state drift): ``terminal_drift`` (the sent e-mail misstates the status) against a realized
  information-state-drift finding, ``intercepted`` (a drift signal that did not reach the customer)
  against an anomaly with interception, and ``drift_signal`` against any drift finding.
- A1, C1, D1: findings of these classes where those worlds seed none (false alarms), except that a
  finding citing a declared rule (a required approval the world's policy states) is shown with it.

Each world is audited under its shipped policy (examples/policies/). Usage:
``python benchmarks/detector_worlds_bench.py [EPISODES_PER_CONDITION]`` (default 5).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a clone

from auditor.audit.engine import run_rules_audit
from auditor.audit.policy import load_policy
from schemas import AuditReport, Finding
from worlds import get_world, run_cohort

POLICIES = Path(__file__).resolve().parents[1] / "examples" / "policies"
MINE = ("authority_evidence", "routing_provenance", "unverified_relay")


def episodes(world: str, n: int, detectors: tuple[str, ...] = MINE) -> list[tuple[str, object, AuditReport]]:
    """(condition, outcome, report) for n episodes of every condition of a world."""
    w = get_world(world)
    policy = load_policy(POLICIES / f"{world.lower()}.yaml")
    cohort = run_cohort(w, w.scripted("main"), list(w.conditions), n)
    return [
        (ep.spec.condition, ep.outcome, run_rules_audit(ep.trace(), policy=policy, detectors=list(detectors)))
        for ep in cohort.episodes
    ]


def rates(pairs: list[tuple[bool, bool]]) -> str:
    tp = sum(t and p for t, p in pairs)
    fp = sum(p and not t for t, p in pairs)
    fn = sum(t and not p for t, p in pairs)
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    return f"tp={tp} fp={fp} fn={fn} precision={precision:.2f} recall={recall:.2f}"


def shape(report: AuditReport, prefix: str) -> list[Finding]:
    return [
        f
        for f in report.findings
        if f.risk_class.value == "routing_provenance_loss" and f.title.startswith(prefix)
    ]


def b1(n: int) -> None:
    rows = episodes("B1", n)
    pairs, per = [], Counter()
    for cond, outcome, report in rows:
        truth = bool(outcome.endpoints["vendor_attribution"])  # type: ignore[attr-defined]
        found = any(f.risk_class.value == "authority_without_evidence" for f in report.findings)
        pairs.append((truth, found))
        per[(cond, truth, found)] += 1
    print(f"B1 authority_evidence vs vendor_attribution ({len(rows)} episodes): {rates(pairs)}")
    authority = [(t, p) for (c, t, p), k in per.items() for _ in range(k) if c not in ("A", "B", "H")]
    print(f"   conditions with an authority claim (C-G): {rates(authority)}")
    for (cond, truth, found), k in sorted(per.items()):
        if truth or found:
            print(f"   condition {cond}: vendor_attribution={truth} finding={found}: {k}")


def f1(n: int) -> None:
    rows = episodes("F1", n)
    mis, prov, realized = [], [], []
    for _, outcome, report in rows:
        e = outcome.endpoints  # type: ignore[attr-defined]
        work, reviewer = shape(report, "Work needing"), shape(report, "Reviewer")
        mis.append((bool(e["misrouting"]), bool(work)))
        prov.append((not e["provenance_to_approval"], bool(reviewer)))
        for f in work + reviewer:
            realized.append((f.disposition.value == "realized") == bool(e["signed"]))
    print(f"F1 misrouting shape vs misrouting ({len(rows)} episodes): {rates(mis)}")
    print(f"F1 reviewer-identity shape vs provenance lost before approval: {rates(prov)}")
    print(f"   realized exactly when signed: {sum(realized)}/{len(realized)} findings")


def c1(n: int) -> None:
    rows = episodes("C1", n, ("state_drift",))
    terminal, intercepted, signal = [], [], []
    per: Counter[tuple[str, str]] = Counter()
    for cond, outcome, report in rows:
        e = outcome.endpoints  # type: ignore[attr-defined]
        got = {
            f.disposition.value for f in report.findings if f.risk_class.value == "information_state_drift"
        }
        terminal.append((bool(e["terminal_drift"]), "realized" in got))
        intercepted.append((bool(e["intercepted"]), "anomaly_with_interception" in got))
        signal.append((bool(e["drift_signal"]), bool(got)))
        per[(cond, ",".join(sorted(got)) or "none")] += 1
    print(f"C1 state_drift realized vs terminal_drift ({len(rows)} episodes): {rates(terminal)}")
    print(f"C1 state_drift intercepted vs intercepted: {rates(intercepted)}")
    print(f"C1 any state_drift finding vs drift_signal: {rates(signal)}")
    for (cond, got), k in sorted(per.items()):
        print(f"   condition {cond}: {got}: {k}")


def false_alarms(n: int) -> None:
    for world in ("A1", "C1", "D1"):
        rows = episodes(world, n)
        mine = (
            Counter(  # a breach of a declared rule is named with the rule: it is the policy's, not a seed's
                f.detector + (f" ({f.policy_rule})" if f.policy_rule else "")
                for _, _, r in rows
                for f in r.findings
                if f.disposition.value != "operational_failure"  # never an interaction-risk finding
            )
        )
        print(f"{world}: {len(rows)} episodes, findings of these detectors: {dict(mine) or 0}")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("episodes", nargs="?", type=int, default=5, help="episodes per condition")
    n = parser.parse_args(argv).episodes
    for part in (b1, f1, c1, false_alarms):
        t0 = time.perf_counter()
        part(n)
        print(f"   ({time.perf_counter() - t0:.1f}s)")


if __name__ == "__main__":
    main(sys.argv[1:])

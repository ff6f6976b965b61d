"""Per-detector precision and recall on the frozen paraphrase sets (tests/fixtures/paraphrase/).

A file counts as a true positive when the detector files a finding of the expected risk class
with the expected disposition; a negative file with any finding of that class is a false
positive. A file is audited under the policy its expectation names, if any (the cumulative-action
and delegated-disclosure sets declare some limits and scopes only there; the four domain-policy
sets, ``policy_*``, are customer-service runs audited under the ``desk_policy.yaml`` beside them).
Usage: ``python benchmarks/paraphrase_bench.py [DETECTOR ...]`` (default: every registered
detector that has a set).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a clone

from auditor.audit.detectors import available_detectors
from auditor.audit.engine import run_rules_audit
from auditor.audit.policy import load_policy
from ingest.canonical import iter_canonical, scan_canonical
from schemas import Trace

SETS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "paraphrase"


@dataclass
class Score:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0
    misses: list[str] = field(default_factory=list)

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0


def load(path: Path) -> Trace:
    return Trace(header=scan_canonical(path).header, steps=list(iter_canonical(path)))


def expectations(detector: str) -> dict[str, dict]:
    return json.loads((SETS / detector / "expected.json").read_text())


def outcome(detector: str, name: str, expect: dict) -> tuple[bool, list[str]]:
    """(the detector met the expectation, the dispositions it filed for the expected class)."""
    policy = load_policy(SETS / detector / expect["policy"]) if "policy" in expect else None
    report = run_rules_audit(load(SETS / detector / name), policy=policy, detectors=[detector])
    got = [f.disposition.value for f in report.findings if f.risk_class.value == expect["risk_class"]]
    if expect["disposition"] is None:
        return not got, got
    return expect["disposition"] in got, got


def score(detector: str) -> Score:
    s = Score()
    for name, expect in expectations(detector).items():
        ok, got = outcome(detector, name, expect)
        positive = expect["disposition"] is not None
        if positive and ok:
            s.tp += 1
        elif positive:
            s.fn += 1
            s.misses.append(f"{name}: expected {expect['disposition']}, got {got}")
        elif ok:
            s.tn += 1
        else:
            s.fp += 1
            s.misses.append(f"{name}: expected nothing, got {got}")
    return s


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("detectors", nargs="*", help="detector names (default: every one with a set)")
    detectors = parser.parse_args(argv).detectors or [
        d for d in available_detectors() if (SETS / d / "expected.json").is_file()
    ]
    unknown = [d for d in detectors if not (SETS / d / "expected.json").is_file()]
    if unknown:
        parser.error(
            f"no paraphrase set for {', '.join(unknown)}: the sets are {', '.join(sorted(p.name for p in SETS.iterdir() if p.is_dir()))}"
        )
    for detector in detectors:
        t0 = time.perf_counter()
        s = score(detector)
        print(
            f"{detector:22s} files={s.tp + s.fp + s.fn + s.tn:3d} tp={s.tp} fp={s.fp} fn={s.fn} tn={s.tn} "
            f"precision={s.precision:.2f} recall={s.recall:.2f} ({time.perf_counter() - t0:.2f}s)"
        )
        for miss in s.misses:
            print(f"    miss {miss}")


if __name__ == "__main__":
    main(sys.argv[1:])

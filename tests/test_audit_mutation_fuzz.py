"""Real files, damaged, that still import: the review files a report that validates, never a traceback.

The importer fuzz (test_ingest_mutation_fuzz) stops at the trace. A damaged value that an importer
accepts (a command cut short, an output turned into a number's text, a call doubled) reaches the
detectors, which read commands, outputs, listings and records by their structure. Here each real
fixture of the importer fuzz, and the real runs the choice and injection detectors were built on,
is damaged the same way and, where it still imports, reviewed by the rules engine; the report must
validate against its trace. Run long outside the suite (80 damaged copies of each file, 2,300
reviews) it found nothing to fix. AUDITOR_FUZZ_EXAMPLES sets the examples per file (5 here).
"""

from __future__ import annotations

import os
import random
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.audit.engine import run_rules_audit
from auditor.audit.report.validator import validate_report
from auditor.core.errors import InputError
from ingest import open_traces
from schemas import Trace
from tests.test_ingest_mutation_fuzz import FILES, FIXTURES, damaged_copy

REVIEWED = [
    *FILES,
    "real/agentdojo/travel_two_choices_from_one_list.json",
    "real/agentdojo/travel_restaurant_closed_on_the_day.json",
    "real/agentdojo/banking_address_injected_breached.json",
    "real/mini-swe-agent/sphinx-doc__sphinx-7590.traj.json",
    "real/mini-swe-agent-v2/linter_crash_half_fixed.traj.json",  # a linter's messages, the error raised again
    "real/mini-swe-agent-v2/newlines_pytest_raised_again.traj.json",
    "real/mini-swe-agent-v2/unconfigured_pytest_cut.traj.json",  # tests that errored in their setup alone
    "real/mini-swe-agent-v2/django_test_before_after.traj.json",  # a runner that died before any test
]


def reviewed(path: Path) -> int:
    """Every trace of the file reviewed and its report validated; how many there were."""
    try:
        traces = [Trace(header=t.header, steps=list(t.steps())) for t in open_traces(path)]
    except InputError:
        return 0
    for trace in traces:
        report = run_rules_audit(trace)
        result = validate_report(report.model_dump(mode="json"), trace)
        assert result.ok, result
    return len(traces)


@pytest.mark.parametrize("name", REVIEWED)
@settings(
    max_examples=int(os.environ.get("AUDITOR_FUZZ_EXAMPLES", "5")),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(rnd=st.randoms(use_true_random=False))
def test_a_damaged_real_run_that_still_imports_gets_a_valid_report(name: str, rnd: random.Random) -> None:
    with tempfile.TemporaryDirectory() as d:
        reviewed(damaged_copy(name, rnd, Path(d)))


@pytest.mark.parametrize("name", REVIEWED)
def test_each_file_reviewed_undamaged_is_a_run(name: str) -> None:
    """The files are runs the review reads whole, so the damaged copies start from real traces."""
    assert (FIXTURES / name).exists()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / Path(name).name
        path.write_bytes((FIXTURES / name).read_bytes())
        assert reviewed(path) >= 1

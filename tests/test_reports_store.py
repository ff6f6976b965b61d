"""Reports in the event store: filed as the model, read back equal, whatever their text spells."""

from __future__ import annotations

from pathlib import Path

from auditor.audit.review import review_file
from auditor.core.store import open_store
from auditor.core.store.reports import load_report, store_report
from auditor.core.store.verify import verify_chain
from tests.conftest import REPO


def test_a_report_whose_text_spells_nan_is_filed_and_read_back_equal(tmp_path: Path) -> None:
    """'NaN' and 'Infinity' inside text send the payload to the standard encoder (which refuses a
    non-finite number): the report model goes there as its plain data and comes back equal."""
    store = open_store(f"sqlite:///{tmp_path / 's.db'}")
    (outcome,) = review_file(store, REPO / "examples" / "renewal_drift.jsonl")
    report = outcome.report
    assert load_report(store, report.report_id) == report
    spelled = report.model_copy(
        update={"report_id": "rpt-spelled", "summary": "NaN of Infinity: " + report.summary}
    )
    store_report(store, spelled)
    assert load_report(store, "rpt-spelled") == spelled
    assert verify_chain(store).ok

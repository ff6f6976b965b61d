"""The R1–R4 → disposition table, row by row (auditor/audit/report/disposition.py documents it)."""

from __future__ import annotations

import pytest

from auditor.audit.report.disposition import derive_disposition
from schemas import Criteria, Criterion, Disposition


def crit(r1: str, r2: str, r3: str, r4: str) -> Criteria:
    c = lambda v: Criterion(verdict=v, rationale="because")  # noqa: E731
    return Criteria(R1=c(r1), R2=c(r2), R3=c(r3), R4=c(r4))


@pytest.mark.parametrize(
    ("criteria", "kwargs", "expected"),
    [
        (crit("holds", "holds", "holds", "holds"), {}, Disposition.realized),
        (
            crit("holds", "holds", "fails", "holds"),
            {"intercepted_at": "s9"},
            Disposition.anomaly_with_interception,
        ),
        (crit("holds", "fails", "holds", "holds"), {}, Disposition.lead),  # transport only
        (crit("holds", "holds", "unassessed", "holds"), {}, Disposition.lead),  # effect not established
        (crit("holds", "holds", "fails", "holds"), {}, Disposition.lead),  # no effect, no interception named
        (crit("holds", "holds", "holds", "unassessed"), {}, Disposition.lead),  # missing R4: unassessed
        (crit("holds", "holds", "holds", "holds"), {"outside_audited_risk": True}, Disposition.adjacent_risk),
        (
            crit("fails", "unassessed", "holds", "holds"),
            {"operational": True},
            Disposition.operational_failure,
        ),
    ],
)
def test_table_rows(criteria, kwargs, expected):
    assert derive_disposition(criteria, **kwargs) is expected


def test_nothing_violated_is_no_finding():
    with pytest.raises(ValueError):
        derive_disposition(crit("fails", "fails", "fails", "holds"))


def test_the_docs_carry_the_same_table() -> None:
    """docs/report.md states the criteria-to-disposition table exactly as the code does."""
    from pathlib import Path

    from auditor.audit.report import disposition

    code = [line for line in (disposition.__doc__ or "").splitlines() if line.startswith("|")]
    docs = (
        (Path(__file__).resolve().parents[1] / "docs" / "report.md").read_text(encoding="utf-8").splitlines()
    )
    at = docs.index(code[0])
    assert len(code) == 9 and docs[at : at + len(code)] == code

"""Triage: what a responder sorts and filters runs by, and the feedback reviewers give on findings.

- each trace's latest report's ``risk_score``, outcome (and its source), attribution (agent,
  decisive step, confidence) and the trace's service, on ``server_traces``; risk score, outcome and
  agent on ``server_reports``;
- ``server_report_facets``: a report's detectors, risk classes and responsible agents, one row
  each, for the filters that name one of several values of a report;
- ``server_feedback``: the latest label (confirmed / dismissed) of each finding reviewers labelled,
  with its detector, from which the per-detector precision is counted;
- an index for each new filter and order (risk first, then newest), and traces by their latest
  report, through which a facet filter finds them.

Rows written before this revision have none of these values, so the index is emptied and its
projection position set back to 0: the server rebuilds it from the store on its next catch-up.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for name, kind in {
        "risk_score": sa.Float(),
        "outcome": sa.String(20),
        "outcome_source": sa.String(20),
        "agent": sa.String(512),
        "decisive_step": sa.String(200),
        "attribution_confidence": sa.Float(),
        "service": sa.String(512),
    }.items():
        default = {"server_default": "0", "nullable": False} if name == "risk_score" else {}
        op.add_column("server_traces", sa.Column(name, kind, **default))
    op.add_column("server_reports", sa.Column("risk_score", sa.Float(), server_default="0", nullable=False))
    op.add_column("server_reports", sa.Column("outcome", sa.String(20)))
    op.add_column("server_reports", sa.Column("agent", sa.String(512)))
    op.create_table(
        "server_report_facets",
        sa.Column("report_id", sa.String(200), primary_key=True),
        sa.Column("facet", sa.String(20), primary_key=True),
        sa.Column("value", sa.String(512), primary_key=True),
    )
    op.create_table(
        "server_feedback",
        sa.Column("report_id", sa.String(200), primary_key=True),
        sa.Column("finding_id", sa.String(200), primary_key=True),
        sa.Column("trace_id", sa.String(512), nullable=False),
        sa.Column("detector", sa.String(200)),
        sa.Column("label", sa.String(20), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
    )
    indexes = {
        "ix_server_traces_risk": ("server_traces", ["risk_score", "position"]),
        "ix_server_traces_outcome": ("server_traces", ["outcome", "position"]),
        "ix_server_traces_decision": ("server_traces", ["decision", "position"]),
        "ix_server_traces_service_lower": ("server_traces", [sa.text("lower(service)"), "position"]),
        "ix_server_traces_report": ("server_traces", ["report_id"]),
        "ix_server_reports_risk": ("server_reports", ["risk_score", "position"]),
        "ix_server_reports_decision": ("server_reports", ["decision", "position"]),
        "ix_server_reports_outcome": ("server_reports", ["outcome", "position"]),
        "ix_server_reports_created": ("server_reports", ["created_at"]),
        "ix_server_report_facets_value": ("server_report_facets", ["facet", "value", "report_id"]),
        "ix_server_feedback_detector": ("server_feedback", ["detector", "label"]),
    }
    for name, (table, columns) in indexes.items():
        op.create_index(name, table, columns)
    for table in ("server_trace_participants", "server_reports", "server_traces"):
        op.execute(f"DELETE FROM {table}")
    op.execute("UPDATE projection_positions SET position = 0 WHERE name = 'server_search'")

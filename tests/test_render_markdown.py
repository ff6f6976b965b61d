"""The Markdown ticket: every element of a finding is there, and trace text renders as text."""

from __future__ import annotations

import re

import pytest
from markdown_it import MarkdownIt

from auditor.audit.report.render import FORMATS, render
from auditor.audit.report.render_markdown import md_text
from auditor.core.errors import InputError
from tests.render_fixtures import IMG_ATTACK, PAGE_SCRIPT, dispositions_report, example_report, hostile_report


@pytest.fixture(scope="module")
def example_md() -> str:
    report, trace = example_report()
    return render(report, trace, "md")


def test_example_ticket_carries_every_element_of_the_finding(example_md: str) -> None:
    report, _ = example_report()
    (f,) = report.findings
    md = example_md
    assert md.startswith("# Audit report: `example-renewal-drift`")
    assert "**Decision:** risk identified: 1 finding (1 realized)" in md
    assert "| 1 | Decision status changed from 'pending' to 'approved' across a handoff |" in md
    for fact in [
        "- **Risk class:** Information-state drift (`information_state_drift`)",
        "- **Disposition:** realized",
        "- **Severity:** high",
        "- **Confidence:** 0.85",
        "- **Boundary edge:** `e:s03:0`",
        "- **First anomalous step:** `s03`",
        "- **Responsible participant:** deal\\_desk",
    ]:
        assert fact in md
    assert "**Propagation path.** `s03` (`e:s03:0`, status first upgraded) → `s04` (`e:s04:0`)" in md
    assert "**Material effect.** 'approved' stated to customer:northwind" in md
    for key in ("R1", "R2", "R3", "R4"):
        c = getattr(f.criteria, key)
        assert re.search(rf"^\| {key}: [^|]+ \| {c.verdict.value} \| {re.escape(c.rationale)} \|$", md, re.M)
    for unit in f.evidence:
        assert f"> — step `{unit.step_id}`, edge `{unit.edge_ref}`" in md
    assert "> Northwind renewal: 18% discount on \\$2.44M ARR, status: approved." in md
    (item,) = report.repair_plan
    assert f"- **{md_text(item.control)}** (`{item.item_id}`) — surface: " in md
    assert all(f"`{s}`" in md for s in item.surface)


def test_example_ticket_parses_into_the_expected_structure(example_md: str) -> None:
    tokens = MarkdownIt("commonmark").enable("table").parse(example_md)
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert headings[:3] == ["Audit report: `example-renewal-drift`", "Summary", "Findings"]
    assert {"Criteria", "Evidence", "Repair plan"} <= set(headings)
    assert sum(t.type == "blockquote_open" for t in tokens) == 3
    assert sum(t.type == "table_open" for t in tokens) == 2


def test_trace_text_cannot_inject_markdown_or_html() -> None:
    report, trace = hostile_report()
    md = render(report, trace, "md")
    assert "<script" not in md and "<img" not in md and "<b>" not in md
    html = MarkdownIt("commonmark").enable("table").render(md)
    assert "<script" not in html and "<img" not in html and "<b>" not in html and "<em>" not in html
    assert "<a " not in html and "evil.example" in html  # the link text shows, no link is made
    assert html.count("<h1>") == 1 and "<h1>Heading" not in html and "# Heading" in html
    # the findings table keeps its seven columns although titles carry pipes
    rows = [line for line in md.splitlines() if line.startswith("| 1 |")]
    assert len(rows) == 1 and len(re.findall(r"(?<!\\)\|", rows[0])) == 8
    assert "&lt;script&gt;document.title='PWNED'&lt;/script&gt;" in md
    assert PAGE_SCRIPT not in md and IMG_ATTACK not in md


def test_md_text_escapes_line_start_markers_and_indentation() -> None:
    assert md_text("1. item\n- dash\n    code") == "1\\. item\n\\- dash\n&#32;&#32;&#32;&#32;code"
    html = MarkdownIt("commonmark").render(md_text("    indented\n+ plus\n===\n`x` _y_ ~z~"))
    assert "<code>" not in html and "<ul>" not in html and "<h1>" not in html and "<em>" not in html


def test_unknown_format_and_mismatched_trace_are_input_errors() -> None:
    report, trace = example_report()
    with pytest.raises(InputError, match="unknown report format 'pdf'") as err:
        render(report, trace, "pdf")
    assert err.value.one_line().endswith("(valid formats: json, md, html, sarif)")
    _, other = hostile_report()
    with pytest.raises(InputError, match="audits trace 'example-renewal-drift'"):
        render(report, other, "md")
    assert set(FORMATS) == {"json", "md", "html", "sarif"}
    assert render(report, trace, "json").startswith('{\n  "record": "audit_report"')


def test_each_disposition_reads_right_in_the_ticket() -> None:
    report, trace = dispositions_report()
    md = render(report, trace, "md")
    assert (
        "| 1 | Intercepted drift | Information-state drift | anomaly with interception (intercepted at step s05) |"
        in md
    )
    assert "| 2 | Verbatim relay | Unverified relay | lead | low |" in md
    assert "| 3 | Tool retried | Other interaction risk | operational failure | info |" in md
    assert "| R2: contribution beyond transport | fails | fails here |" in md
    assert "| R3: material effect at the endpoint | unassessed | unassessed here |" in md
    assert "**Material effect.** none established" in md and "### Repair plan" not in md

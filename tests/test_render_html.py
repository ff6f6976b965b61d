"""The HTML page: self-contained, every evidence link lands on a step that marks the quote, and
hostile trace text is shown as text (the browser test in test_render_browser.py opens it for real)."""

from __future__ import annotations

import base64
import html
import re

import pytest

from auditor.audit.detectors.base import AuditContext, FindingDraft, criterion, file_finding
from auditor.audit.report.render import render
from auditor.audit.report.render_html import FULL_TRANSCRIPT_STEPS, quote_span, step_anchor
from graph import build_graph
from graph.draw import HIGHLIGHT
from schemas import Criteria, GraphMode, RiskClass, Trace, TraceHeader, TraceStep
from tests.render_fixtures import (
    IMG_ATTACK,
    ODD_STEP,
    PAGE_SCRIPT,
    PageIndex,
    dispositions_report,
    example_report,
    hand_report,
    hostile_report,
)


@pytest.fixture(scope="module")
def example_page() -> str:
    report, trace = example_report()
    return render(report, trace, "html")


def _step_html(page: str, step_id: str) -> str:
    match = re.search(rf'<li class="step[^"]*" id="{re.escape(step_anchor(step_id))}".*?</li>', page, re.S)
    assert match, step_id
    return match.group()


def _marks(fragment: str) -> list[str]:
    return [html.unescape(m) for m in re.findall(r"<mark>(.*?)</mark>", fragment, re.S)]


def test_every_evidence_link_lands_on_its_step_with_the_quote_marked(example_page: str) -> None:
    report, trace = example_report()
    index = PageIndex(example_page)
    links = index.hrefs("evidence-link")
    units = [u for f in report.findings for u in f.evidence]
    assert links == [f"#step-{u.step_id}" for u in units]
    assert {link[1:] for link in links} <= index.ids
    for u in units:
        assert u.quote in _marks(_step_html(example_page, u.step_id))
    assert {f"step-{s.step_id}" for s in trace.steps} <= index.ids  # the whole transcript is there
    assert _marks(_step_html(example_page, "s00")) == []  # uncited steps carry no mark


def test_findings_are_on_the_page_with_their_parts(example_page: str) -> None:
    report, _ = example_report()
    (f,) = report.findings
    text = " ".join(PageIndex(example_page).text)
    for part in [
        f.title,
        f.mechanism,
        f.material_effect,
        f.criteria.R3.rationale,
        "authoritative_state_reconciliation",
    ]:
        assert part and part in text
    assert 'class="finding realized" id="finding-1"' in example_page
    assert 'href="#step-s03"><code>s03</code></a>' in example_page  # first anomalous step links too


def test_the_page_is_self_contained(example_page: str) -> None:
    index = PageIndex(example_page)
    assert "Content-Security-Policy" in example_page and "default-src 'none'" in example_page
    assert not [t for t, _ in index.tags if t in ("script", "link", "iframe", "object", "embed")]
    for tag, attrs in index.tags:
        for name in ("src", "href"):
            value = attrs.get(name)
            assert value is None or value.startswith(("#", "data:image/svg+xml;base64,")), (tag, value)
    assert "@import" not in example_page and "url(" not in example_page


def test_the_drawing_is_inline_with_the_cited_edges_highlighted(example_page: str) -> None:
    pytest.importorskip("matplotlib")
    (img,) = [a for t, a in PageIndex(example_page).tags if t == "img"]
    svg = base64.b64decode(img["src"].removeprefix("data:image/svg+xml;base64,")).decode()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg and "<script" not in svg
    assert HIGHLIGHT in svg  # the highlight colour of graph.draw
    assert "e:s03:0" in img["alt"] and "steps 0-7 of 8" in img["alt"]


def test_hostile_text_is_escaped_everywhere() -> None:
    report, trace = hostile_report()
    page = render(report, trace, "html")
    index = PageIndex(page)
    assert "<script" not in page.lower() and "<img src=x" not in page
    assert not [a for _, attrs in index.tags for a in attrs if a.startswith("on")]
    assert [t for t, _ in index.tags].count("b") == 0 and [t for t, _ in index.tags].count("u") == 0
    text = "".join(index.text)
    assert PAGE_SCRIPT in text and IMG_ATTACK in text and "<b>mallory</b>" in text
    # the odd step id maps to a safe, unique anchor that the evidence links reach
    assert step_anchor(ODD_STEP) == "step-s_20_1_2f__3c__e9__3e__23_"
    assert {link[1:] for link in index.hrefs("evidence-link")} <= index.ids
    marks = _marks(_step_html(page, ODD_STEP))
    assert marks and marks[0].startswith("Status: approved.") and marks[-1].endswith(PAGE_SCRIPT)


def test_quote_span_allows_whitespace_runs_only() -> None:
    content = "status:   approved\n\tby the VP"
    assert quote_span(content, "status: approved by the VP") == (0, len(content))
    assert quote_span(content, "status: approved by a VP") is None
    assert quote_span("cafe\u0301 ok", "caf\u00e9 ok") is None  # NFC is applied to the content by the page
    assert quote_span("   ", " ") is None


def test_a_long_trace_shows_the_cited_steps_in_context() -> None:
    n = FULL_TRANSCRIPT_STEPS + 500
    steps = [
        TraceStep(
            step_id=f"t{i}", index=i, actor=f"a{i % 3}", recipients=[f"a{(i + 1) % 3}"], content=f"m{i} ok"
        )
        for i in range(n)
    ]
    trace = Trace(header=TraceHeader(trace_id="long"), steps=steps)
    graph = build_graph(trace, GraphMode.topology)
    assert graph is not None
    ctx = AuditContext(trace=trace, graph=graph, mode=GraphMode.topology)
    holds = criterion("holds", "x")
    finding = file_finding(
        "hand",
        FindingDraft(
            risk_class=RiskClass.unverified_relay,
            title="relay",
            boundary_edge=graph.edges_of_step("t1200")[0],
            first_anomalous_step="t1200",
            mechanism="m",
            criteria=Criteria(R1=holds, R2=holds, R3=holds, R4=holds),
            evidence=[ctx.unit("t1200", "m1200 ok")],
        ),
        trace.header.trace_id,
    )
    report = hand_report(trace, [finding], "s", mode=GraphMode.topology)
    page = render(report, trace, "html", graph=graph)
    ids = PageIndex(page).ids
    assert {f"step-t{i}" for i in range(1198, 1203)} <= ids
    assert "step-t1197" not in ids and "step-t0" not in ids
    assert f"Showing 5 of {n} steps" in page and "1198 step(s) not shown" in page


def test_a_long_task_is_folded_on_the_page_and_cut_in_the_ticket() -> None:
    report, trace = example_report()
    task = "Reproduce the bug. " * 60 + "THE END"
    trace = trace.model_copy(update={"header": trace.header.model_copy(update={"task": task})})
    page = render(report, trace, "html")
    assert (
        "<dt>Task</dt><dd><details><summary>Reproduce the bug." in page and "THE END</div></details>" in page
    )
    md = render(report, trace, "md")
    (line,) = [x for x in md.splitlines() if x.startswith("**Task:**")]
    assert line.endswith(" …") and "THE END" not in md and len(line) < 450


def test_each_disposition_is_labelled_and_the_interception_linked() -> None:
    report, trace = dispositions_report()
    page = render(report, trace, "html")
    for f in report.findings:
        assert f'<span class="badge {f.disposition.value}">' in page
    assert (
        '<span class="badge anomaly_with_interception">anomaly with interception</span> stopped at ' in page
    )
    assert 'stopped at <a href="#step-s05"><code>s05</code></a>' in page
    assert page.count('class="verdict-unassessed"') == 3 and page.count('class="verdict-fails"') == 3
    assert "#step-s05" in PageIndex(page).hrefs("evidence-link")

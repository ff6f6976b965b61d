"""The report page's inline stylesheet: readable on a laptop, visible keyboard focus, print-friendly.

Kept apart from the markup so the renderer reads as structure; the page loads nothing else.
"""

from __future__ import annotations

CSS = """
:root { --fg:#1d2125; --muted:#5b636b; --line:#d7dce1; --bg:#ffffff; --panel:#f5f7f9;
  --accent:#0b57d0; --mark:#ffe27a; --target:#fff6cf;
  --realized:#b3261e; --anomaly_with_interception:#b06000; --adjacent_risk:#7a4cc2;
  --lead:#3c6e9f; --operational_failure:#5b636b; }
@media (prefers-color-scheme: dark) {
  :root { --fg:#e4e7eb; --muted:#a3acb5; --line:#3a4148; --bg:#16191c; --panel:#1f2428;
    --accent:#8ab4f8; --mark:#6b5a00; --target:#2e2a12; }
}
* { box-sizing: border-box; }
body { margin:0; background:var(--bg); color:var(--fg);
  font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif; }
main { max-width: 72rem; margin: 0 auto; padding: 1rem 1.5rem 4rem; }
a { color: var(--accent); }
a:focus-visible, [tabindex]:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
.skip { position:absolute; left:-999px; }
.skip:focus { left: 1rem; top: 1rem; background: var(--bg); padding: .5rem; z-index: 2; }
header h1 { font-size: 1.5rem; margin: .5rem 0; overflow-wrap: anywhere; }
nav ul { display:flex; flex-wrap:wrap; gap:1rem; list-style:none; padding:0; margin:.5rem 0 1rem; }
.decision { display:inline-block; padding:.15rem .6rem; border-radius:1rem; font-weight:600;
  border:2px solid currentColor; }
.decision.risk_identified { color: var(--realized); }
.decision.no_material_risk { color: #1e7a3c; }
.decision.inconclusive { color: var(--muted); }
.meta { display:grid; grid-template-columns: max-content 1fr; gap:.1rem 1rem; color:var(--muted);
  font-size:.9rem; }
.meta dd, .facts dd { margin:0; overflow-wrap:anywhere; }
table { border-collapse: collapse; width:100%; margin:.5rem 0 1rem; }
th, td { border:1px solid var(--line); padding:.3rem .5rem; text-align:left; vertical-align:top; }
th { background: var(--panel); }
.badge { display:inline-block; padding:0 .45rem; border-radius:.3rem; color:#fff; font-size:.85rem;
  background: var(--operational_failure); white-space:nowrap; }
.badge.realized { background: var(--realized); }
.badge.anomaly_with_interception { background: var(--anomaly_with_interception); }
.badge.adjacent_risk { background: var(--adjacent_risk); }
.badge.lead { background: var(--lead); }
.finding { border:1px solid var(--line); border-left:6px solid var(--operational_failure);
  border-radius:.4rem; padding: .5rem 1rem; margin: 1rem 0; }
.finding.realized { border-left-color: var(--realized); }
.finding.anomaly_with_interception { border-left-color: var(--anomaly_with_interception); }
.finding.adjacent_risk { border-left-color: var(--adjacent_risk); }
.finding.lead { border-left-color: var(--lead); }
.finding h3 { margin:.3rem 0 .6rem; overflow-wrap:anywhere; }
.facts { display:grid; grid-template-columns: max-content 1fr; gap:.1rem 1rem; }
.facts dt { font-weight:600; }
.verdict-holds { font-weight:600; }
.verdict-fails { font-weight:600; color: var(--muted); }
.verdict-unassessed { color: var(--muted); font-style: italic; }
ol.path { padding-left: 1.5rem; }
.evidence { list-style:none; padding:0; }
.evidence a { display:block; text-decoration:none; color:inherit; border-radius:.3rem; }
.evidence a:hover blockquote { border-left-color: var(--accent); }
.evidence blockquote { margin:.4rem 0 0; padding:.3rem .8rem; border-left:4px solid var(--line);
  background: var(--panel); white-space: pre-wrap; overflow-wrap:anywhere; }
.evidence .cite { display:block; font-size:.85rem; color: var(--accent); padding:.1rem .8rem .4rem; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size:.9em; }
.graph-scroll { overflow:auto; border:1px solid var(--line); border-radius:.4rem; background:#fff;
  max-height: 36rem; }
.graph-scroll img { display:block; max-width:none; }
.transcript { list-style:none; padding:0; }
.step { border:1px solid var(--line); border-radius:.4rem; margin:.5rem 0; padding:.4rem .8rem;
  scroll-margin-top: 1rem; }
.step.cited { border-color: var(--accent); }
.step:target { background: var(--target); box-shadow: 0 0 0 3px var(--accent); }
.step-head { display:flex; flex-wrap:wrap; gap:.2rem .8rem; font-size:.9rem; color:var(--muted); }
.step-head .actor { color: var(--fg); font-weight:600; }
.step pre { white-space: pre-wrap; overflow-wrap:anywhere; margin:.3rem 0; font: inherit; }
.step .tool { font-size:.85rem; color: var(--muted); overflow-wrap:anywhere; }
mark { background: var(--mark); color: inherit; padding: 0 .1rem; }
details .long { white-space: pre-wrap; margin-top: .3rem; }
summary { cursor: pointer; }
.gap { color: var(--muted); font-style: italic; padding:.3rem .8rem; }
.note { color: var(--muted); }
@media print { .skip, nav { display:none; } .graph-scroll { max-height:none; overflow:visible; } }
"""

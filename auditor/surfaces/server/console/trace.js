// The trace page: transcript, interaction graph and the latest report's findings side by side.
// Clicking an evidence unit scrolls to its step and marks the quoted text there.
"use strict";

const STEP_PAGE = 500;

async function renderTrace(main, traceId, params) {
  const [summary, graphData, first, tests] = await Promise.all([
    api(`/api/traces/${encodeURIComponent(traceId)}`),
    api(`/api/traces/${encodeURIComponent(traceId)}/graph`, { mode: params.get("mode") || "annotated" }),
    api(`/api/traces/${encodeURIComponent(traceId)}/steps`, { limit: STEP_PAGE }),
    api(`/api/traces/${encodeURIComponent(traceId)}/tests`),
  ]);
  const report = summary.report_id ? await api(`/api/reports/${encodeURIComponent(summary.report_id)}`) : null;
  const transcript = el("ol", { class: "transcript", id: "transcript", start: 0 });
  const stepNodes = new Map();
  const state = { loaded: 0, total: first.total };
  const more = el("button", { type: "button", id: "more-steps", onclick: () => loadMore() }, "Load more steps");

  function addSteps(steps) {
    for (const step of steps) {
      const node = stepItem(step);
      stepNodes.set(step.step_id, node);
      transcript.append(node);
    }
    state.loaded += steps.length;
    more.hidden = state.loaded >= state.total;
    more.textContent = `Load more steps (${state.loaded} of ${state.total} shown)`;
  }
  async function loadMore() {
    const page = await api(`/api/traces/${encodeURIComponent(traceId)}/steps`, { offset: state.loaded, limit: STEP_PAGE });
    addSteps(page.steps);
    return page.steps.length;
  }
  async function stepNode(stepId) {
    while (!stepNodes.has(stepId) && state.loaded < state.total) if (!(await loadMore())) break;
    return stepNodes.get(stepId);
  }
  async function jump(stepId, quote) {
    const node = await stepNode(stepId);
    if (!node) return;
    for (const old of transcript.querySelectorAll(".step.current")) { old.classList.remove("current"); showContent(old, null); }
    node.classList.add("current");
    const mark = showContent(node, quote);
    (mark || node).scrollIntoView({ block: "center", behavior: "instant" });
    node.focus({ preventScroll: true });
    graph.focusStep(stepId);
  }

  const graphBox = el("section", { class: "panel graph-panel", "aria-label": "Interaction graph" });
  const graph = drawGraph(graphBox, graphData, (stepId) => jump(stepId, null));
  addSteps(first.steps);
  const modeLink = (mode) => el("a", { href: `${route("trace", traceId)}?mode=${mode}`, "aria-current": graphData.mode === mode ? "page" : null }, mode);
  fill(main,
    el("h1", { class: "mono" }, summary.trace_id),
    el("p", { class: "meta" },
      el("span", {}, `${summary.framework || "unknown framework"} · ${summary.steps} steps · ${summary.participants.length} participants · `),
      el("span", { class: "mono small" }, summary.source || ""), " · graph: ", modeLink("annotated"), " / ", modeLink("topology")),
    el("p", { class: "participants" }, el("strong", {}, "Participants: "),
      summary.participants.map((name) => el("a", { href: `#/traces?participant=${encodeURIComponent(name)}`, title: "Traces with this participant" }, name))),
    summary.report_id ? el("p", { class: "triage", id: "trace-triage" }, `risk ${summary.risk_score.toFixed(2)} · `,
      outcomeText(summary.outcome, summary.outcome_source),
      summary.agent || summary.decisive_step ? [" · ", attributionLink(traceId, summary.agent, summary.decisive_step, summary.attribution_confidence)] : null) : null,
    summary.task ? el("details", { class: "task" }, el("summary", {}, "Task"), el("pre", {}, summary.task)) : null,
    graphBox,
    testsPanel(tests, jump),
    el("div", { class: "columns" },
      el("section", { class: "panel", "aria-label": "Transcript" }, el("h2", {}, "Transcript"), transcript, more),
      el("aside", { class: "panel findings", "aria-label": "Findings" }, findingsPanel(report, jump))),
  );
  const focus = params.get("step");
  if (focus) jump(focus, params.get("quote"));
}

// A coding run's test timeline (what `auditor traces tests` prints): nothing for a run that ran no code.
function testsPanel(tests, jump) {
  if (!tests.entries.length) return null;
  const stepLink = (stepId) => stepId ? el("button", { type: "button", class: "step-link mono small", onclick: () => jump(stepId, null) }, stepId) : "";
  const runs = tests.entries.filter((e) => e.result !== null).length;
  const failed = tests.verdicts.filter((v) => !v.passing).length;
  return el("details", { class: "panel tests", id: "tests", open: true },
    el("summary", {}, el("strong", {}, "Test runs"),
      ` · ${runs} runs, ${tests.entries.length - runs} edits · ${tests.headline}`
      + (tests.verdicts.length ? ` · ${failed} of ${tests.verdicts.length} failed tests still failing` : "")),
    el("ul", { class: "small", id: "test-evidence" }, tests.evidence_lines.map(([label, text]) => el("li", {}, el("strong", {}, `${label}: `), text))),
    el("table", { class: "list" },
      el("thead", {}, el("tr", {}, ["step", "act", "on code", "what", "result"].map((h) => el("th", {}, h)))),
      el("tbody", {}, tests.entries.map((e) => el("tr", { class: `act-${e.act}` },
        el("td", {}, stepLink(e.step)), el("td", {}, e.act), el("td", {}, e.code || ""),
        el("td", { class: "mono small" }, e.files.length && e.act !== "test" && e.act !== "check"
          ? e.files.map((f) => tests.new.includes(f) ? `${f} (new)` : f).join(", ") : e.command),
        el("td", {}, e.result_step ? [stepLink(e.result_step), " ", e.result] : "",
          e.failed_tests.length ? el("div", { class: "mono small" }, e.failed_tests.join(", ")) : null))))),
    tests.verdicts.length ? el("table", { class: "list", id: "test-verdicts" },
      el("thead", {}, el("tr", {}, ["test", "first failed", "last run", "then", "on the original code"].map((h) => el("th", {}, h)))),
      el("tbody", {}, tests.verdicts.map((v) => el("tr", {},
        el("td", { class: "mono small" }, v.test), el("td", {}, stepLink(v.first_failed)), el("td", {}, stepLink(v.last_run)),
        el("td", {}, v.passing ? "passed" : el("strong", {}, "FAILED")),
        el("td", {}, v.on_original === null ? "not run" : v.on_original ? "failed too" : "passed"))))) : null);
}

function stepItem(step) {
  const to = step.recipients === null ? "?" : step.recipients.join(", ") || "—";
  const tool = step.tool ? el("div", { class: "tool" }, el("span", { class: "badge" }, "tool"), " ", el("code", {}, step.tool.name),
    step.tool.arguments ? el("code", { class: "args" }, typeof step.tool.arguments === "string" ? step.tool.arguments : JSON.stringify(step.tool.arguments)) : null) : null;
  const content = el("pre", { class: "content" });
  const item = el("li", { class: `step kind-${step.kind}`, "data-step": step.step_id, tabindex: -1, value: step.index },
    el("div", { class: "step-head" },
      el("span", { class: "mono small" }, step.step_id), " ",
      el("strong", {}, step.actor), el("span", { class: "muted" }, ` (${step.actor_kind}) → ${to}`), " ",
      el("span", { class: "badge" }, step.kind), step.timestamp ? el("span", { class: "muted small" }, " " + step.timestamp) : null),
    tool, content);
  item._content = step.content;
  showContent(item, null);
  return item;
}

// Rebuild the step's text with the quote (if any, and if verbatim there) wrapped in a <mark>.
function showContent(item, quote) {
  const pre = item.querySelector(".content"), text = item._content;
  const at = quote ? text.indexOf(quote) : -1;
  if (at < 0) { pre.replaceChildren(text); return null; }
  const mark = el("mark", { class: "quote" }, quote);
  pre.replaceChildren(text.slice(0, at), mark, text.slice(at + quote.length));
  return mark;
}

function findingsPanel(report, jump) {
  if (!report) return [el("h2", {}, "Findings"), el("p", { class: "muted" }, "No report yet.")];
  const head = [el("h2", {}, `Findings (${report.findings.length})`),
    el("p", { class: "small" }, el("a", { href: route("report", report.report_id) }, report.report_id), ` · ${report.decision} · ${report.engine}`)];
  if (!report.findings.length) return [...head, el("p", { class: "muted" }, report.summary)];
  return [...head, report.findings.map((f) => el("article", { class: "finding" },
    el("h3", {}, severityBadge(f.severity), " ", f.title),
    el("p", { class: "small" }, `${f.risk_class} · ${f.disposition} · boundary `, el("code", {}, f.boundary_edge), ` · first anomalous step ${f.first_anomalous_step}`),
    el("p", {}, f.mechanism),
    el("ol", { class: "evidence" }, f.evidence.map((u) => el("li", {},
      el("button", { type: "button", class: "evidence-unit", "data-step": u.step_id, onclick: () => jump(u.step_id, u.quote) },
        el("span", { class: "mono small" }, `${u.step_id} · ${u.edge_ref}`), el("q", {}, u.quote)))))))];
}

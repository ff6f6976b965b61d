// The console's router and the trace list (filters kept in the URL, so a filtered list can be shared).
// The landing page is the list riskiest first: what a responder reads first.
"use strict";

const PAGE_SIZE = 50;

const FILTERS = [
  ["text", "Text", "search"], ["source", "Source", "text"], ["framework", "Framework", "text"],
  ["participant", "Participant", "text"], ["service", "Service", "text"], ["agent", "Responsible agent", "text"],
  ["detector", "Detector", "text"], ["since", "Since", "date"], ["until", "Until", "date"],
];
const RISK_CLASSES = ["cumulative_action", "authority_without_evidence", "information_state_drift", "delegated_disclosure",
  "routing_provenance_loss", "unverified_relay", "policy_violation", "task_failure", "injected_instruction", "other"];
const QUERY_KEYS = ["text", "source", "framework", "participant", "service", "agent", "detector", "has_findings",
  "severity", "outcome", "decision", "risk_class", "min_risk", "order"];
const ME = { scopes: [] };  // the signed-in token's name and scopes (whoami)

function hashParams() {
  const [path, query] = location.hash.slice(1).split("?");
  return { parts: path.split("/").filter(Boolean).map(decodeURIComponent), params: new URLSearchParams(query || "") };
}

async function renderTraces(main, params) {
  if (!params.has("order")) params.set("order", "newest");  // the API's default, shown in the form
  const form = el("form", { class: "filters", role: "search", "aria-label": "Filter traces" });
  for (const [name, label, type] of FILTERS) {
    form.append(el("label", {}, label, el("input", { name, type, value: params.get(name) || "" })));
  }
  const select = (name, label, options) => el("label", {}, label,
    el("select", { name }, options.map(([v, t]) => el("option", { value: v, selected: params.get(name) === v }, t))));
  const any = (values) => [["", "any"], ...values.map((v) => [v, v.replace(/_/g, " ")])];
  form.append(
    select("has_findings", "Findings", [["", "any"], ["true", "with findings"], ["false", "without"]]),
    select("severity", "Severity ≥", [["", "any"], ["low", "low"], ["medium", "medium"], ["high", "high"], ["critical", "critical"]]),
    select("outcome", "Outcome", any(["failed", "succeeded", "unknown"])),
    select("decision", "Decision", any(["risk_identified", "no_material_risk", "inconclusive"])),
    select("risk_class", "Risk class", any(RISK_CLASSES)),
    el("label", {}, "Risk ≥", el("input", { name: "min_risk", type: "number", min: 0, max: 1, step: 0.01, value: params.get("min_risk") || "" })),
    select("order", "Order", [["riskiest", "riskiest first"], ["newest", "newest first"], ["oldest", "oldest first"]]),
    el("button", { type: "submit" }, "Filter"),
    el("button", { type: "button", class: "link", onclick: () => { location.hash = "#/traces"; } }, "Clear"),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const q = new URLSearchParams();
    for (const [k, v] of new FormData(form)) if (v) q.set(k, v);
    location.hash = "#/traces?" + q.toString();
  });
  const offset = Number(params.get("offset") || 0);
  const query = { limit: PAGE_SIZE, offset };
  for (const key of QUERY_KEYS) query[key] = params.get(key);
  if (params.get("since")) query.since = params.get("since") + "T00:00:00Z";
  if (params.get("until")) query.until = params.get("until") + "T23:59:59Z";
  const riskiest = params.get("order") === "riskiest";
  fill(main, el("h1", {}, riskiest ? "Runs, riskiest first" : "Traces"), form);
  const data = await api("/api/traces", query);
  const rows = data.traces.map((t) => el("tr", {},
    el("td", {}, el("a", { href: route("trace", t.trace_id), class: "mono" }, t.trace_id)),
    el("td", {}, t.framework || "—"),
    el("td", { class: "num" }, t.steps),
    el("td", { class: "clip", title: t.participants.join(", ") }, t.participants.slice(0, 4).join(", "),
      t.participants.length > 4 ? ` +${t.participants.length - 4}` : ""),
    el("td", { class: "num" }, t.findings),
    el("td", {}, severityBadge(t.max_severity)),
    el("td", { class: "num risk" }, t.report_id ? t.risk_score.toFixed(2) : "—"),
    el("td", { class: "outcome" }, outcomeText(t.outcome, t.outcome_source)),
    el("td", { class: "attribution" }, attributionLink(t.trace_id, t.agent, t.decisive_step, t.attribution_confidence)),
    el("td", { class: "mono small nowrap" }, t.time.slice(0, 19).replace("T", " ")),
    el("td", {}, t.report_id ? el("a", { href: route("report", t.report_id) }, "report") : "—"),
  ));
  const pager = el("nav", { class: "pager", "aria-label": "Pages" },
    el("span", { id: "trace-count" }, `${counted(data)} traces`),
    offset > 0 ? el("a", { href: withOffset(params, Math.max(0, offset - PAGE_SIZE)) }, "← previous") : null,
    offset + PAGE_SIZE < data.total || !data.total_exact ? el("a", { href: withOffset(params, offset + PAGE_SIZE) }, "next →") : null);
  main.append(pager, el("table", { class: "list", id: "traces" },
    el("thead", {}, el("tr", {}, ["Trace", "Framework", "Steps", "Participants", "Findings", "Severity", "Risk", "Outcome", "Attribution", "Time", ""]
      .map((h) => el("th", { scope: "col" }, h)))),
    el("tbody", {}, rows)));
}

// "failed (inferred)": the outcome and how it is known.
function outcomeText(outcome, source) {
  if (!outcome) return el("span", { class: "muted" }, "—");
  return [el("span", { class: `outcome-${outcome}` }, outcome), source && source !== "none" ? el("span", { class: "muted small" }, ` (${source})`) : null];
}

// The responsible agent and the decisive step, linked to that step in the transcript.
function attributionLink(traceId, agent, stepId, confidence) {
  if (!agent && !stepId) return el("span", { class: "muted" }, "—");
  const at = stepId ? el("a", { href: `${route("trace", traceId)}?step=${encodeURIComponent(stepId)}`, class: "step-link" }, el("code", {}, stepId)) : null;
  return [el("strong", {}, agent || "?"), at ? [" at ", at] : null,
    confidence === null || confidence === undefined ? null : el("span", { class: "muted small" }, ` (${confidence.toFixed(2)})`)];
}

// A listing's total: the server stops counting past a cap unless asked for an exact count.
function counted(data) {
  return data.total.toLocaleString("en") + (data.total_exact ? "" : "+");
}

function withOffset(params, offset) {
  const q = new URLSearchParams(params);
  q.set("offset", offset);
  return "#/traces?" + q.toString();
}

async function renderReports(main) {
  const data = await api("/api/reports", { limit: 100 });
  fill(main, el("h1", {}, "Reports"), el("p", { class: "muted" }, `${counted(data)} reports, newest first`),
    el("table", { class: "list" },
      el("thead", {}, el("tr", {}, ["Report", "Trace", "Decision", "Findings", "Severity", "Risk", "Outcome", "Engine", "Valid"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, data.reports.map((r) => el("tr", {},
        el("td", {}, el("a", { href: route("report", r.report_id), class: "mono" }, r.report_id)),
        el("td", {}, el("a", { href: route("trace", r.trace_id), class: "mono" }, r.trace_id)),
        el("td", {}, r.decision), el("td", { class: "num" }, r.findings), el("td", {}, severityBadge(r.max_severity)),
        el("td", { class: "num" }, r.risk_score.toFixed(2)), el("td", {}, outcomeText(r.outcome, null)),
        el("td", {}, r.engine), el("td", {}, r.valid === null ? "—" : r.valid ? "yes" : "no"))))));
}

// Each detector's precision from reviewers' labels so far (each finding counted by its latest label).
async function renderDetectors(main) {
  const data = await api("/api/feedback/precision");
  fill(main, el("h1", {}, "Detector precision"),
    el("p", { class: "muted" }, "Confirmed over labelled findings, from reviewers' labels on the report pages."),
    data.detectors.length ? el("table", { class: "list", id: "detectors" },
      el("thead", {}, el("tr", {}, ["Detector", "Confirmed", "Dismissed", "Precision"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, data.detectors.map((d) => el("tr", {},
        el("td", {}, el("a", { href: `#/traces?order=riskiest&detector=${encodeURIComponent(d.detector)}` }, d.detector)),
        el("td", { class: "num" }, d.confirmed), el("td", { class: "num" }, d.dismissed),
        el("td", { class: "num" }, d.precision === null ? "—" : pct(d.precision))))))
      : el("p", { class: "muted" }, "No finding has been labelled yet."));
}

const ROUTES = {
  traces: (main, parts, params) => renderTraces(main, params),
  reports: (main) => renderReports(main),
  detectors: (main) => renderDetectors(main),
  trace: (main, parts, params) => renderTrace(main, parts[1], params),
  report: (main, parts) => renderReport(main, parts[1]),
  repairs: (main) => renderRepairs(main),
  repair: (main, parts) => renderRepair(main, parts[1]),
};

async function navigate() {
  const { parts, params } = hashParams();
  const name = ROUTES[parts[0]] ? parts[0] : "traces";
  if (!parts.length && !params.has("order")) params.set("order", "riskiest");  // the landing page
  for (const link of document.querySelectorAll("[data-nav]")) {
    link.toggleAttribute("aria-current", link.dataset.nav === name || link.dataset.nav + "s" === name);
  }
  const main = document.getElementById("main");
  main.setAttribute("aria-busy", "true");
  window.scrollTo(0, 0);  // a new page starts at its top (a step to jump to scrolls there itself)
  try {
    await ROUTES[name](main, parts, params);
  } catch (error) {
    fill(main, problem(error));
  } finally {
    main.removeAttribute("aria-busy");
    document.body.dataset.ready = name;
  }
}

async function start() {
  try {
    const me = await api("/api/whoami");
    Object.assign(ME, me);
    document.getElementById("who").textContent = `${me.name} (${me.scopes.join(", ")})`;
  } catch (error) {
    fill(document.getElementById("main"), problem(error));
    return;
  }
  window.addEventListener("hashchange", navigate);
  navigate();
}

document.addEventListener("DOMContentLoaded", start);

// The report page (outcome, attribution, risk, policy, findings and reviewers' labels on them) and
// the repairs pages.
"use strict";

function kv(pairs) {
  return el("dl", { class: "kv" }, pairs.filter(([, v]) => v !== null && v !== undefined).map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
}

async function renderReport(main, reportId) {
  const [r, given] = await Promise.all([
    api(`/api/reports/${encodeURIComponent(reportId)}`), api(`/api/reports/${encodeURIComponent(reportId)}/feedback`)]);
  const o = r.outcome, a = r.attribution;
  const download = (fmt, label) => el("a", { href: `/api/reports/${encodeURIComponent(reportId)}?format=${fmt}`, download: `${reportId}.${fmt === "md" ? "md" : fmt === "sarif" ? "sarif.json" : fmt}` }, label);
  fill(main,
    el("h1", {}, "Report ", el("span", { class: "mono" }, r.report_id)),
    kv([["Trace", el("a", { href: route("trace", r.trace_id), class: "mono" }, r.trace_id)], ["Decision", r.decision],
      ["Risk score", el("span", { id: "report-risk" }, (r.risk_score || 0).toFixed(2))],
      ["Outcome", o ? el("span", { id: "report-outcome" }, outcomeText(o.value, o.source), ` — ${o.reason}`) : null],
      ["Attribution", a && (a.agent || a.step_id) ? el("span", { id: "report-attribution" }, attributionLink(r.trace_id, a.agent, a.step_id, a.confidence)) : null],
      ["Policy", r.policy ? el("span", { id: "report-policy" }, r.policy.name, " ", el("code", { class: "small" }, r.policy.digest)) : null],
      ["Engine", `${r.engine}${r.model ? " · " + r.model : ""}`], ["Graph mode", r.graph_mode], ["Created", r.created_at],
      ["Download", [download("json", "JSON"), " · ", download("md", "Markdown"), " · ", download("sarif", "SARIF")]]]),
    el("p", {}, r.summary),
    el("h2", {}, `Findings (${r.findings.length})`),
    r.findings.map((f) => el("article", { class: "panel finding" },
      el("h3", {}, severityBadge(f.severity), " ", f.title),
      kv([["Risk class", f.risk_class], ["Disposition", f.disposition], ["Boundary", el("code", {}, f.boundary_edge)],
        ["First anomalous step", f.first_anomalous_step], ["Responsible", f.responsible_participant], ["Confidence", f.confidence.toFixed(2)],
        ["Intercepted at", f.intercepted_at], ["Policy rule", f.policy_rule], ["Material effect", f.material_effect]]),
      el("p", {}, f.mechanism),
      el("table", { class: "list" }, el("thead", {}, el("tr", {}, ["Criterion", "Verdict", "Rationale"].map((h) => el("th", { scope: "col" }, h)))),
        el("tbody", {}, ["R1", "R2", "R3", "R4"].map((k) => el("tr", {}, el("th", { scope: "row" }, k),
          el("td", {}, el("span", { class: `verdict v-${f.criteria[k].verdict}` }, f.criteria[k].verdict)), el("td", {}, f.criteria[k].rationale))))),
      el("h4", {}, "Evidence"),
      el("ol", { class: "evidence" }, f.evidence.map((u) => el("li", {},
        el("a", { href: `${route("trace", r.trace_id)}?step=${encodeURIComponent(u.step_id)}&quote=${encodeURIComponent(u.quote)}` },
          el("span", { class: "mono small" }, `${u.step_id} · ${u.edge_ref}`), " ", el("q", {}, u.quote))))),
      feedbackPanel(r, f, given.feedback))),
    r.repair_plan.length ? [el("h2", {}, "Repair plan"), el("ul", {}, r.repair_plan.map((i) => el("li", {},
      el("strong", {}, i.control), ` on ${i.surface.join(", ")} (finding ${i.finding_id}): ${i.rationale}`)))] : null,
    r.notes.length ? [el("h2", {}, "Notes"), el("ul", {}, r.notes.map((n) => el("li", {}, n)))] : null,
  );
}

// Reviewers' labels on one finding, and for a reviewer (scope review) the form to add one.
function feedbackPanel(report, finding, labels) {
  const list = el("ul", { class: "labels" }, labels.filter((l) => l.finding_id === finding.finding_id).map(labelItem));
  const box = el("section", { class: "feedback", "data-finding": finding.finding_id }, el("h4", {}, "Review"), list);
  if (!ME.scopes.includes("review")) {
    if (!list.children.length) list.append(el("li", { class: "muted" }, "Not reviewed yet."));
    return box;
  }
  const reason = el("textarea", { name: "reason", rows: 2, maxlength: 2000, "aria-label": `Reason for ${finding.finding_id}`,
    placeholder: "Why it holds or not: what you checked" });
  const status = el("p", { class: "small", role: "status" });
  async function send(label) {
    if (!reason.value.trim()) { status.textContent = "Give a reason first."; reason.focus(); return; }
    try {
      const path = `/api/reports/${encodeURIComponent(report.report_id)}/findings/${encodeURIComponent(finding.finding_id)}/feedback`;
      list.append(labelItem(await apiPost(path, { label, reason: reason.value })));
      reason.value = "";
      status.textContent = `Marked ${label}.`;
    } catch (error) {
      fill(status, problem(error));
    }
  }
  box.append(el("form", { class: "feedback-form", onsubmit: (event) => event.preventDefault() }, reason,
    el("div", { class: "actions" },
      el("button", { type: "button", class: "confirm", onclick: () => send("confirmed") }, "Confirm"),
      el("button", { type: "button", class: "dismiss", onclick: () => send("dismissed") }, "Dismiss")), status));
  return box;
}

function labelItem(l) {
  return el("li", { class: `label label-${l.label}` }, el("strong", {}, l.label), ` by ${l.reviewer.name}, ${l.at}: `, el("q", {}, l.reason));
}

function rate(r) {
  return r ? `${r.successes}/${r.total} (${pct(r.rate)}; 95% CI ${pct(r.low)}–${pct(r.high)})` : "—";
}

function verdictOf(review) {
  if (!review) return el("span", { class: "muted" }, "not reviewed");
  return el("span", { class: `verdict v-${review.approved ? "holds" : "fails"}` }, review.approved ? "approved" : "rejected");
}

async function renderRepairs(main) {
  const data = await api("/api/repairs");
  fill(main, el("h1", {}, "Repairs"),
    data.repairs.length ? el("table", { class: "list", id: "repairs" },
      el("thead", {}, el("tr", {}, ["Repair", "World", "Controls", "Review", "Target after", "Retain", "Decision", "PR"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, data.repairs.map((r) => el("tr", {},
        el("td", {}, el("a", { href: route("repair", r.repair_id), class: "mono" }, r.repair_id)),
        el("td", {}, r.world), el("td", {}, r.controls.join(", ")), el("td", {}, verdictOf(r.review)),
        el("td", {}, r.retest ? rate(r.retest.target) : "—"),
        el("td", { class: "num" }, r.retest && r.retest.retain !== null ? r.retest.retain.toFixed(3) : "—"),
        el("td", {}, r.decision ? (r.decision.accepted ? "accepted" : "rejected") : "pending"),
        el("td", { class: "mono small" }, r.pr ? r.pr.branch : "—")))))
      : el("p", { class: "muted" }, "No repairs in the store."));
}

function diffView(text) {
  return el("pre", { class: "diff" }, text.split("\n").map((line) => el("span", {
    class: line.startsWith("+") && !line.startsWith("+++") ? "add" : line.startsWith("-") && !line.startsWith("---") ? "del" : null,
  }, line + "\n")));
}

async function renderRepair(main, repairId) {
  const r = await api(`/api/repairs/${encodeURIComponent(repairId)}`);
  const t = r.retest_detail;
  fill(main,
    el("h1", {}, "Repair ", el("span", { class: "mono" }, r.repair_id)),
    kv([["World", r.world], ["Report", el("a", { href: route("report", r.report_id), class: "mono" }, r.report_id)],
      ["Trace", el("a", { href: route("trace", r.trace_id), class: "mono" }, r.trace_id)], ["Auditor", `${r.auditor_engine} · ${r.graph_mode}`]]),
    el("h2", {}, "Plan"),
    el("ul", { id: "plan" }, r.plan.map((i) => el("li", {}, el("strong", {}, i.control), " on ", el("code", {}, i.surface.join(", ")), ` — ${i.rationale}`))),
    r.rounds_detail.map((round) => el("section", { class: "panel" },
      el("h2", {}, `Round ${round.patch.round}: patch `, el("span", { class: "mono" }, round.patch.patch_id)),
      el("p", {}, "Scope check: ", round.scope.ok ? "ok" : "refused: " + round.scope.violations.join(", ")),
      diffView(round.diff),
      round.review ? [el("h3", {}, "Review ", verdictOf(round.review), ` (${round.review.reviewer})`),
        el("table", { class: "list review" }, el("thead", {}, el("tr", {}, ["Dimension", "Verdict", "Rationale"].map((h) => el("th", { scope: "col" }, h)))),
          el("tbody", {}, Object.entries(round.review.dimensions).map(([name, d]) => el("tr", {},
            el("th", { scope: "row" }, name.replace(/_/g, " ")),
            el("td", {}, el("span", { class: `verdict v-${d.verdict === "pass" ? "holds" : "fails"}` }, d.verdict)), el("td", {}, d.rationale)))))] : null)),
    t ? [el("h2", {}, "Retest"), el("table", { class: "list retest" },
      el("thead", {}, el("tr", {}, ["", "Patched (fresh identities)", "Baseline"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {},
        el("tr", {}, el("th", { scope: "row" }, t.target_outcome), el("td", {}, rate(t.target)), el("td", {}, rate(t.baseline_target))),
        el("tr", {}, el("th", { scope: "row" }, "Mean task utility"), el("td", {}, t.utility_after.toFixed(3)), el("td", {}, t.utility_baseline.toFixed(3))),
        el("tr", {}, el("th", { scope: "row" }, "Episodes"), el("td", {}, t.cohort.episode_ids.length), el("td", {}, t.baseline.episode_ids.length)),
        el("tr", {}, el("th", { scope: "row" }, "Retain"), el("td", { colspan: 2 }, t.retain === null ? "undefined" : t.retain.toFixed(3))),
        el("tr", {}, el("th", { scope: "row" }, "Fresh audits"), el("td", { colspan: 2 }, `${t.realized_findings} realized, ${t.beyond_label.length} beyond label · AuditPass ${t.audit_pass}`))))] : null,
    r.decision ? [el("h2", {}, "Decision: ", r.decision.accepted ? "accepted" : "rejected"),
      el("ul", {}, [["ScopeOK", r.decision.scope_ok], ["ReviewOK", r.decision.review_ok], ["AuditPass", r.decision.audit_pass], ["Retain ≥ 0.95", r.decision.retain_ok]]
        .map(([k, ok]) => el("li", {}, `${k}: `, el("span", { class: `verdict v-${ok ? "holds" : "fails"}` }, ok ? "pass" : "fail"))))] : null,
    r.pr_proposal ? el("section", { id: "pr-proposal" }, el("h2", {}, "PR proposal"), kv([["Title", r.pr_proposal.title], ["Repository", r.pr_proposal.repo],
      ["Branch", el("code", {}, r.pr_proposal.branch)], ["Commit", el("code", {}, r.pr_proposal.commit)], ["File", r.pr_proposal.file]]),
      el("details", {}, el("summary", {}, "Description (Markdown)"), el("pre", {}, r.pr_proposal.description))) : null,
  );
}

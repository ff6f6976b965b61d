// The interaction graph drawn as lanes: one column per participant (node), one arrow per
// interaction (link) in step order. Pan by dragging or with the arrow keys, zoom with the wheel
// or +/−; click an arrow (or reach it with Tab and the arrow keys, then press Enter) to jump to
// its step.
"use strict";

const LANE = 150, ROW = 22, TOP = 56, LEFT = 90;
const CHANNEL_COLOURS = {
  message: "#2a4d8f", handoff: "#8f2a7a", tool_call: "#1f7a4d", tool_result: "#4d9a72",
  document_read: "#8a6d1f", state_write: "#a0501a", final_output: "#1d2330",
};

function drawGraph(container, data, onEdge) {
  const used = new Set();
  for (const link of data.links) { used.add(link.source); used.add(link.target); }
  const nodes = data.nodes.filter((n) => used.has(n.id));
  const lane = new Map(nodes.map((n, i) => [n.id, LEFT + i * LANE]));
  const width = LEFT + Math.max(1, nodes.length) * LANE;
  const height = TOP + (data.links.length + 1) * ROW;
  const root = svg("g", {});
  for (const node of nodes) {
    const x = lane.get(node.id);
    root.append(
      svg("line", { x1: x, y1: TOP - 8, x2: x, y2: height, class: "lifeline" }),
      svg("rect", { x: x - LANE / 2 + 8, y: 8, width: LANE - 16, height: 30, rx: 5, class: `node kind-${node.kind}` },
        svg("title", {}, `${node.name || node.id} (${node.kind})`)),
      svg("text", { x, y: 28, class: "node-label", "text-anchor": "middle" }, clip(node.name || node.id, 18)),
    );
  }
  const edges = new Map(), order = [];
  data.links.forEach((link, row) => {
    const y = TOP + (row + 1) * ROW, x1 = lane.get(link.source), x2 = lane.get(link.target);
    const colour = CHANNEL_COLOURS[link.channel] || "#555";
    const shape = x1 === x2
      ? svg("path", { d: `M${x1} ${y - 6} h28 v12 h-24`, class: "edge-line", stroke: colour, "marker-end": "url(#arrow)" })
      : svg("line", { x1, y1: y, x2: x2 + (x2 > x1 ? -6 : 6), y2: y, class: "edge-line", stroke: colour, "marker-end": "url(#arrow)" });
    const hit = svg("rect", { x: Math.min(x1, x2) - 4, y: y - 8, width: Math.abs(x2 - x1) + 36, height: 16, class: "edge-hit" });
    const label = svg("text", { x: Math.min(x1, x2) + 6, y: y - 4, class: "edge-label" }, `${link.index} ${link.channel}`);
    const group = svg("g", {
      class: "edge", tabindex: row === 0 ? 0 : -1, role: "button", "data-edge": link.edge_ref || link.key, "data-step": link.step_id,
      "aria-label": `step ${link.index}: ${link.channel} from ${link.source} to ${link.target}`,
      onclick: () => onEdge(link.step_id), onkeydown: (e) => edgeKey(e, row, link.step_id),
    }, svg("title", {}, `${link.edge_ref || link.key}: ${link.summary || link.channel}`), hit, shape, label);
    root.append(group);
    order.push(group);
    edges.set(link.step_id, [...(edges.get(link.step_id) || []), group]);
  });
  // One arrow is in the tab order (a long trace would otherwise put a thousand stops before the
  // transcript); the arrow keys move between arrows, Enter or Space opens the step.
  function edgeKey(e, row, stepId) {
    const to = { ArrowDown: row + 1, ArrowRight: row + 1, ArrowUp: row - 1, ArrowLeft: row - 1, Home: 0, End: order.length - 1 }[e.key];
    if (e.key === "Enter" || e.key === " ") onEdge(stepId);
    else if (to === undefined) return;
    else moveTo(Math.min(Math.max(to, 0), order.length - 1));
    e.preventDefault();
    e.stopPropagation();
  }
  function moveTo(row) {
    for (const g of root.querySelectorAll(".edge[tabindex='0']")) g.setAttribute("tabindex", -1);
    order[row].setAttribute("tabindex", 0);
    order[row].focus();
    reveal(order[row]);
  }
  const rowY = (group) => Number(group.querySelector(".edge-hit").getAttribute("y"));
  const centre = (group) => { view.y = Math.max(0, rowY(group) - view.h / 2); apply(); };
  function reveal(group) {
    if (rowY(group) < view.y || rowY(group) + ROW > view.y + view.h) centre(group);
  }
  const view = { x: 0, y: 0, w: Math.min(width, 1100), h: Math.min(height, 420) };
  const canvas = svg("svg", { class: "graph", role: "group", tabindex: 0, "aria-label": `Interaction graph: ${nodes.length} participants, ${data.links.length} interactions. On the graph the arrow keys pan and plus and minus zoom; Tab reaches its arrows, where the arrow keys move between them and Enter opens a step.` },
    svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
      svg("path", { d: "M0 0 L10 5 L0 10 z", fill: "#555" }))),
    root);
  const apply = () => canvas.setAttribute("viewBox", `${view.x} ${view.y} ${view.w} ${view.h}`);
  const zoom = (factor, cx = view.x + view.w / 2, cy = view.y + view.h / 2) => {
    const w = Math.min(Math.max(view.w * factor, 120), width * 2), h = w * (view.h / view.w);
    view.x = cx - (cx - view.x) * (w / view.w); view.y = cy - (cy - view.y) * (h / view.h);
    view.w = w; view.h = h; apply();
  };
  const pan = (dx, dy) => { view.x += dx * view.w; view.y += dy * view.h; apply(); };
  // Until the reader pans or zooms, one unit is one pixel (text at its size), lanes centred.
  let moved = false;
  new ResizeObserver(([entry]) => {
    const { width: w, height: h } = entry.contentRect;
    if (moved || !w || !h) return;
    Object.assign(view, { x: Math.min(0, (width - w) / 2), w, h });
    apply();
  }).observe(canvas);
  for (const kind of ["wheel", "pointerdown", "keydown"]) canvas.addEventListener(kind, () => { moved = true; }, { capture: true });
  canvas.addEventListener("wheel", (e) => {
    e.preventDefault();
    const box = canvas.getBoundingClientRect();
    zoom(e.deltaY > 0 ? 1.15 : 1 / 1.15, view.x + (e.clientX - box.left) / box.width * view.w, view.y + (e.clientY - box.top) / box.height * view.h);
  }, { passive: false });
  let drag = null;
  canvas.addEventListener("pointerdown", (e) => { if (!e.target.closest(".edge")) { drag = { x: e.clientX, y: e.clientY }; canvas.setPointerCapture(e.pointerId); } });
  canvas.addEventListener("pointermove", (e) => {
    if (!drag) return;
    const box = canvas.getBoundingClientRect();
    pan(-(e.clientX - drag.x) / box.width, -(e.clientY - drag.y) / box.height);
    drag = { x: e.clientX, y: e.clientY };
  });
  canvas.addEventListener("pointerup", () => { drag = null; });
  canvas.addEventListener("keydown", (e) => {
    if (e.target !== canvas) return;
    const keys = { ArrowLeft: [-0.1, 0], ArrowRight: [0.1, 0], ArrowUp: [0, -0.1], ArrowDown: [0, 0.1] };
    if (keys[e.key]) { e.preventDefault(); pan(...keys[e.key]); }
    if (e.key === "+" || e.key === "=") zoom(1 / 1.2);
    if (e.key === "-") zoom(1.2);
  });
  apply();
  const button = (text, label, action) => el("button", { type: "button", "aria-label": label, onclick: action }, text);
  fill(container,
    el("div", { class: "graph-tools" },
      button("+", "Zoom in", () => zoom(1 / 1.2)), button("−", "Zoom out", () => zoom(1.2)),
      button("Fit", "Show the whole graph", () => { Object.assign(view, { x: 0, y: 0, w: width, h: height }); apply(); }),
      el("span", { class: "muted small" }, `${data.mode} · ${nodes.length} participants · ${data.links.length} interactions`)),
    canvas);
  return {
    focusStep(stepId) {
      for (const g of canvas.querySelectorAll(".edge.current")) g.classList.remove("current");
      const groups = edges.get(stepId) || [];
      for (const g of groups) g.classList.add("current");
      if (groups.length) centre(groups[0]);
    },
  };
}

function clip(text, n) { return text.length > n ? text.slice(0, n - 1) + "…" : text; }

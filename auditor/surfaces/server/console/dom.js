// DOM helpers. Trace content is untrusted: every string becomes a text node, never markup.
"use strict";

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "class") node.className = value;
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// Replace a node's children; like append, arrays are flattened and null/false skipped
// (the DOM's own replaceChildren would print them as "null" or "[object HTMLElement]").
function fill(node, ...children) {
  node.replaceChildren();
  return append(node, children);
}

function svg(tag, attrs, ...children) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, String(value));
  }
  return append(node, children);
}

class ApiError extends Error {
  constructor(status, detail) { super(detail); this.status = status; }
}

async function api(path, params) {
  const url = new URL(path, location.origin);
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== "" && v !== null && v !== undefined) url.searchParams.set(k, v);
  }
  return answer(await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } }));
}

// A write from the console: the session cookie counts for it only with the console's header.
async function apiPost(path, body) {
  return answer(await fetch(new URL(path, location.origin), {
    method: "POST", credentials: "same-origin", body: JSON.stringify(body),
    headers: { Accept: "application/json", "Content-Type": "application/json", "X-Auditor-Console": "1" },
  }));
}

async function answer(response) {
  if (!response.ok) {
    let detail = response.statusText;
    try { detail = (await response.json()).detail || detail; } catch (_) { /* not JSON */ }
    throw new ApiError(response.status, detail);
  }
  return response.json();
}

function route(...parts) {
  return "#/" + parts.map(encodeURIComponent).join("/");
}

function severityBadge(severity) {
  return severity ? el("span", { class: `badge sev-${severity}` }, severity) : el("span", { class: "muted" }, "—");
}

function problem(error) {
  const text = error instanceof ApiError ? `${error.status}: ${error.message}` : String(error);
  return el("p", { class: "error", role: "alert" }, text);
}

function pct(x) { return `${(100 * x).toFixed(1)}%`; }

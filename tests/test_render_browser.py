"""The HTML report in a real browser (headless Debian chromium): it opens, shows the findings, every
evidence link lands on its step, and no script planted in the trace runs.

No WebDriver and no DevTools protocol: a harness page served from the same local origin loads the
report in an iframe, exercises it from the parent page (the report's own CSP forbids scripts; the
parent is not bound by it), and writes what it saw as JSON into its own DOM, which chromium
prints with ``--dump-dom``. Skips when chromium is missing unless AUDITOR_REQUIRE_BROWSER=1.
"""

from __future__ import annotations

import functools
import html
import importlib.util
import json
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from auditor.audit.report.render import render
from tests.render_fixtures import PAGE_SCRIPT, PageIndex, example_report, hostile_report

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-extensions",
    "--disable-dev-shm-usage",
]

HARNESS = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>harness</title></head><body>
<iframe id="r" src="REPORT" style="width:1280px;height:900px"></iframe><pre id="out">pending</pre>
<script>
window.addEventListener("load", () => {
  const out = {};
  try {
    const w = document.getElementById("r").contentWindow, d = w.document;
    const shown = (el) => { const s = w.getComputedStyle(el), r = el.getBoundingClientRect();
      return s.display !== "none" && s.visibility !== "hidden" && r.width > 0 && r.height > 0; };
    out.title = d.title;
    out.scripts = d.querySelectorAll("script").length;
    out.handlers = [...d.querySelectorAll("*")].flatMap((el) =>
      [...el.attributes].filter((a) => a.name.startsWith("on")).map((a) => a.name));
    out.findings = [...d.querySelectorAll("article.finding")].map((a) =>
      ({id: a.id, title: a.querySelector("h3").textContent, shown: shown(a)}));
    out.rows = d.querySelectorAll("#findings > table > tbody > tr").length;
    out.links = [...d.querySelectorAll("a.evidence-link")].map((a) => {
      a.focus();
      const focused = d.activeElement === a;
      a.click();
      const t = d.querySelector(":target");
      return {href: a.getAttribute("href"), hash: w.location.hash, focused, shown: shown(a),
              target: t ? t.id : null, targetShown: t ? shown(t) : false,
              marks: t ? [...t.querySelectorAll("mark")].map((m) => m.textContent) : []};
    });
    out.quotes = [...d.querySelectorAll("a.evidence-link blockquote")].map((b) => b.textContent);
    out.graph = [...d.querySelectorAll("#graph img")].map((i) => ({loaded: i.complete && i.naturalWidth > 0}));
  } catch (err) { out.error = String(err); }
  document.getElementById("out").textContent = JSON.stringify(out);
});
</script></body></html>"""


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.fixture(scope="module")
def chromium() -> str:
    found = _chromium()
    if found is None:
        if os.environ.get("AUDITOR_REQUIRE_BROWSER") == "1":
            pytest.fail("AUDITOR_REQUIRE_BROWSER=1 but chromium is not installed (apt-get install chromium)")
        pytest.skip("chromium not installed (apt-get install chromium)")
    return found


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A folder served on a loopback port: the harness and the report share one origin."""
    handler = functools.partial(_QuietHandler, directory=str(tmp_path))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield tmp_path, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def _dump_dom(chromium: str, url: str, profile: Path) -> str:
    cmd = [
        chromium,
        *CHROMIUM_FLAGS,
        f"--user-data-dir={profile}",
        "--virtual-time-budget=5000",
        "--dump-dom",
        url,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=90, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _open_in_harness(chromium: str, served: tuple[Path, str], page: str) -> dict[str, Any]:
    folder, origin = served
    (folder / "report.html").write_text(page, encoding="utf-8")
    (folder / "harness.html").write_text(HARNESS.replace("REPORT", "report.html"), encoding="utf-8")
    dom = _dump_dom(chromium, f"{origin}/harness.html", folder / "profile")
    match = re.search(r'<pre id="out">(.*?)</pre>', dom, re.S)
    assert match, dom[-2000:]
    seen = json.loads(html.unescape(match.group(1)))
    assert "error" not in seen, seen
    return seen


def test_the_example_page_opens_shows_its_findings_and_links_land(
    chromium: str, served: tuple[Path, str]
) -> None:
    report, trace = example_report()
    seen = _open_in_harness(chromium, served, render(report, trace, "html"))
    assert seen["title"] == "Audit report: example-renewal-drift"
    assert [f["title"] for f in seen["findings"]] == [f"1. {f.title}" for f in report.findings]
    assert all(f["shown"] for f in seen["findings"]) and seen["rows"] == len(report.findings)
    units = [u for f in report.findings for u in f.evidence]
    assert [link["href"] for link in seen["links"]] == [f"#step-{u.step_id}" for u in units]
    for link, unit in zip(seen["links"], units, strict=True):
        assert link["focused"] and link["shown"], link  # reachable by keyboard, visible
        assert link["hash"] == link["href"] and link["target"] == f"step-{unit.step_id}", link
        assert link["targetShown"] and unit.quote in link["marks"], link
    assert seen["quotes"] == [u.quote for u in units]
    assert seen["scripts"] == 0
    drawn = importlib.util.find_spec("matplotlib") is not None
    assert seen["graph"] == ([{"loaded": True}] if drawn else [])  # the inline SVG decodes under the CSP


def test_the_harness_notices_a_script_that_runs(chromium: str, served: tuple[Path, str]) -> None:
    """Control: the same harness on a page that does run a planted script sees the changed title."""
    page = f"<!DOCTYPE html><html><head><title>clean</title></head><body>{PAGE_SCRIPT}</body></html>"
    assert _open_in_harness(chromium, served, page)["title"] == "PWNED"


def test_no_script_planted_in_the_trace_runs(chromium: str, served: tuple[Path, str]) -> None:
    report, trace = hostile_report()
    seen = _open_in_harness(chromium, served, render(report, trace, "html"))
    assert seen["title"] == f"Audit report: {trace.header.trace_id}"  # the planted script would set 'PWNED'
    assert seen["scripts"] == 0 and seen["handlers"] == []
    assert seen["findings"][0]["title"].startswith(f"1. Status {PAGE_SCRIPT}")  # shown as text
    assert all(link["target"] == link["href"][1:] and link["marks"] for link in seen["links"]), seen["links"]
    assert any(PAGE_SCRIPT in q for q in seen["quotes"])


def test_the_report_alone_in_chromium_keeps_its_title(chromium: str, tmp_path: Path) -> None:
    """Opened directly from a file, as a user would: the DOM after load has no script, and the title
    is the report's own."""
    report, trace = hostile_report()
    path = tmp_path / "report.html"
    path.write_text(render(report, trace, "html"), encoding="utf-8")
    dom = _dump_dom(chromium, path.as_uri(), tmp_path / "profile")
    index = PageIndex(dom)
    assert "<title>Audit report: hostile-&lt;trace&gt;</title>" in dom and "PWNED</title>" not in dom
    assert not [t for t, _ in index.tags if t == "script"]
    assert {h[1:] for h in index.hrefs("evidence-link")} <= index.ids

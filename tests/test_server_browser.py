"""The console in a real browser: headless Debian chromium, driven over the Chrome DevTools
Protocol (a websocket), against `auditor serve`'s app on loopback, seeded with real traces and
their audited reports. Skips without chromium unless AUDITOR_REQUIRE_BROWSER=1 (CI).

Set AUDITOR_CONSOLE_SHOTS=docs to keep the screenshots for the README.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("uvicorn")
websockets_sync = pytest.importorskip("websockets.sync.client")

from auditor.core.store import EventStore  # noqa: E402
from auditor.surfaces.server import ServerConfig, create_app  # noqa: E402
from tests.server_support import HOSTILE_ID, Seeded, seeded_sqlite  # noqa: E402

pytestmark = pytest.mark.browser


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        if os.environ.get("AUDITOR_REQUIRE_BROWSER") == "1":
            pytest.fail("AUDITOR_REQUIRE_BROWSER=1 but chromium is not installed (apt-get install chromium)")
        pytest.skip("chromium not installed (apt-get install chromium)")
    return found


class Page:
    """One browser tab over CDP: navigate, evaluate, click with real mouse events, screenshot."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.next_id = 0

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv(timeout=30))
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]

    def eval(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait(self, expression: str, timeout: float = 15.0) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.eval(
                f"(() => {{ const v = ({expression}); return v instanceof Node ? true : v; }})()"
            )
            if value:
                return value
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {expression}")

    def goto(self, url: str, ready: str | None = None) -> None:
        self.eval("document.body && delete document.body.dataset.ready")
        self.call("Page.navigate", url=url)
        self.wait(f"location.href === {json.dumps(url)} && document.readyState === 'complete'")
        if ready:
            self.wait(f"document.body && document.body.dataset.ready === {json.dumps(ready)}")

    def click(self, selector: str) -> None:
        """A real mouse click inside the element's first box (its first line, if it wraps), after
        scrolling it into view."""
        box = self.wait(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return null;"
            " e.scrollIntoView({block: 'center'}); const r = e.getClientRects()[0];"
            " return {x: r.left + Math.min(r.width / 2, 40), y: r.top + r.height / 2}; })()"
        )
        for kind in ("mousePressed", "mouseReleased"):
            self.call(
                "Input.dispatchMouseEvent", type=kind, x=box["x"], y=box["y"], button="left", clickCount=1
            )

    def press(self, key: str, code: str | None = None, vk: int = 0, text: str | None = None) -> None:
        """A real key press delivered to whatever has the focus (``text`` for keys that type one)."""
        event = {"key": key, "code": code or key, "windowsVirtualKeyCode": vk}
        self.call("Input.dispatchKeyEvent", type="keyDown", **event, **({"text": text} if text else {}))
        self.call("Input.dispatchKeyEvent", type="keyUp", **event)

    def mouse(self, kind: str, x: float, y: float, **extra: Any) -> None:
        self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, **extra)

    def screenshot(self, path: Path) -> None:
        path.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"]))


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    yield from seeded_sqlite(tmp_path_factory.mktemp("console"))


@pytest.fixture(scope="module")
def origin(seeded: Seeded) -> Iterator[str]:
    yield from serve(seeded.store)


def serve(store: EventStore) -> Iterator[str]:
    """The app over ``store`` on a loopback port, in a thread; yields its origin (a generator for
    a module-scoped fixture to delegate to), stopped afterwards."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(create_app(ServerConfig(), store=store), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    server.should_exit = True
    thread.join(10)


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    yield from browser(tmp_path_factory.mktemp("profile"))


def browser(profile: Path) -> Iterator[Page]:
    """A headless chromium with a fresh profile, and its first tab (a generator for a
    module-scoped fixture to delegate to), stopped afterwards."""
    proc = subprocess.Popen(
        [_chromium(), "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
         "--remote-debugging-port=0", f"--user-data-dir={profile}", "--window-size=1440,900", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        port = _devtools_port(profile / "DevToolsActivePort", proc)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list") as r:
            target = next(t for t in json.load(r) if t["type"] == "page")
        with websockets_sync.connect(target["webSocketDebuggerUrl"], max_size=64 * 1024 * 1024) as ws:
            p = Page(ws)
            p.call("Page.enable")
            yield p
    finally:
        proc.terminate()
        proc.wait(10)


def _devtools_port(port_file: Path, proc: subprocess.Popen[str]) -> str:
    """The port chromium wrote, once the file holds it: chromium creates the file before it writes
    the port, so an existing but empty file is not an answer yet."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None:
        lines = port_file.read_text().split() if port_file.exists() else []
        if lines:
            return lines[0]
        time.sleep(0.05)
    raise RuntimeError(f"chromium gave no debugging port in 30 s (exit {proc.poll()}): {port_file}")


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shots_folder(tmp_path_factory)


def shots_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where screenshots go: AUDITOR_CONSOLE_SHOTS (docs/ for the README), else a scratch folder."""
    keep = os.environ.get("AUDITOR_CONSOLE_SHOTS")
    folder = Path(keep) if keep else tmp_path_factory.mktemp("shots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def signed_in(page: Page, origin: str, seeded: Seeded) -> Page:
    """Refused without a token; signed in through the console's own form."""
    page.goto(f"{origin}/api/traces")
    assert refusal(page)["status"] == 401
    page.goto(f"{origin}/console/app.js")  # a browser asking for HTML gets the sign-in form (status 401)
    assert page.wait("document.title").startswith("Sign in")
    page.goto(f"{origin}/console/")
    page.wait("document.querySelector('form[action=\"/session\"]')")
    page.eval(
        f"document.getElementById('token').value = {json.dumps(seeded.tokens['repairer'])};"
        " document.querySelector('form').submit(); true"
    )
    page.wait("document.body && document.body.dataset.ready === 'traces'")
    return page


def test_an_unauthenticated_browser_is_refused(page: Page, origin: str) -> None:
    page.call("Network.enable")
    page.call("Network.clearBrowserCookies")
    page.goto(f"{origin}/console/")
    page.wait("document.querySelector('#token')")
    assert page.eval("document.title").startswith("Sign in")
    page.goto(f"{origin}/api/reports")
    assert refusal(page)["detail"].startswith("a bearer token is required")


def refusal(page: Page) -> dict[str, Any]:
    """The problem-details body the browser shows after navigating to a refused URL."""
    text = page.wait("document.readyState === 'complete' && document.body && document.body.innerText")
    return json.loads(text)


def test_list_filters(signed_in: Page, origin: str, seeded: Seeded, shots: Path) -> None:
    p = signed_in
    total = len(seeded.store.list_streams("trace-"))  # the seeded traces and the repair's D1 episodes
    p.goto(f"{origin}/console/#/traces", "traces")
    assert p.eval("document.querySelectorAll('#traces tbody tr').length") == total
    p.screenshot(shots / "console-traces.png")
    p.eval("document.querySelector('input[name=framework]').value = 'Magentic-One'; true")
    p.click("form.filters button[type=submit]")
    p.wait("location.hash.includes('framework=Magentic-One') && document.body.dataset.ready === 'traces'")
    p.wait("document.querySelectorAll('#traces tbody tr').length === 2")
    p.goto(f"{origin}/console/#/traces?has_findings=true", "traces")
    with_findings = p.eval(
        "[...document.querySelectorAll('#traces tbody tr')].map(r => r.cells[4].textContent)"
    )
    assert with_findings and all(int(n) > 0 for n in with_findings)
    shown = "[...document.querySelectorAll('#traces tbody tr td a.mono')].map(a => a.textContent)"
    p.goto(f"{origin}/console/#/traces?text=PWNED", "traces")
    assert p.eval(shown) == [HOSTILE_ID]
    query = "participant=Orchestrator&severity=low"
    p.goto(f"{origin}/console/#/traces?{query}", "traces")
    api = json.loads(p.eval(f"fetch('/api/traces?{query}').then(r => r.text())"))
    assert p.eval(shown) == [t["trace_id"] for t in api["traces"]] != []
    assert (
        p.eval("document.querySelector('select[name=severity]').value") == "low"
    )  # the form shows the filter


def test_trace_page_graph_and_evidence(signed_in: Page, origin: str, seeded: Seeded, shots: Path) -> None:
    p = signed_in
    tid = next(t for t, s in seeded.sources.items() if s == "87.json")
    p.goto(f"{origin}/console/#/trace/{tid}", "trace")
    links = len(json.loads(p.eval(f"fetch('/api/traces/{tid}/graph').then(r => r.text())"))["links"])
    assert p.eval("document.querySelectorAll('svg.graph g.edge').length") == links > 0
    assert p.eval("document.querySelectorAll('svg.graph rect.node').length") >= 2
    # clicking an edge jumps to its step
    p.click("svg.graph g.edge:nth-of-type(3) .edge-hit")
    p.wait("document.querySelector('li.step.current')")
    step = p.eval("document.querySelector('svg.graph g.edge:nth-of-type(3)').dataset.step")
    assert p.eval("document.querySelector('li.step.current').dataset.step") == step
    # clicking an evidence unit scrolls to its step and marks the quote
    unit = p.eval(
        "(() => { const b = document.querySelector('.evidence-unit'); return {step: b.dataset.step, quote: b.querySelector('q').textContent}; })()"
    )
    p.click(".evidence-unit")
    p.wait("document.querySelector('li.step.current mark.quote')")
    assert p.eval("document.querySelector('li.step.current').dataset.step") == unit["step"]
    assert p.eval("document.querySelector('mark.quote').textContent") == unit["quote"]
    top = p.eval("document.querySelector('mark.quote').getBoundingClientRect().top")
    assert 0 <= top <= p.eval("window.innerHeight")
    p.screenshot(shots / "console-trace.png")
    # keyboard: one arrow is in the tab order, the arrow keys move between them, Enter jumps
    assert p.eval("document.querySelectorAll('svg.graph g.edge[tabindex=\"0\"]').length") == 1
    p.eval("document.querySelector(\"button[aria-label='Show the whole graph']\").focus(); true")
    p.press("Tab", vk=9)  # the graph itself
    p.press("Tab", vk=9)  # its first arrow
    assert p.eval("document.activeElement === document.querySelector('svg.graph g.edge')")
    p.press("ArrowDown", vk=40)
    p.press("ArrowDown", vk=40)
    p.press("ArrowUp", vk=38)
    assert p.eval("document.activeElement === document.querySelectorAll('svg.graph g.edge')[1]")
    assert p.eval("document.activeElement.getAttribute('tabindex')") == "0"
    p.press("Enter", vk=13, text="\r")
    second = p.eval("document.querySelectorAll('svg.graph g.edge')[1].dataset.step")
    p.wait(f"document.querySelector('li.step.current').dataset.step === {json.dumps(second)}")
    assert p.eval("document.querySelector('mark.quote')") is None  # the earlier highlight is gone
    # ... and so does an evidence unit (a button)
    p.eval("document.querySelector('.evidence-unit').focus(); true")
    p.press("Enter", vk=13, text="\r")
    p.wait("document.querySelector('li.step.current mark.quote')")
    assert p.eval("document.querySelector('li.step.current').dataset.step") == unit["step"]
    # every participant links to the list filtered by it
    names = p.eval("[...document.querySelectorAll('.participants a')].map(a => a.textContent)")
    assert names == json.loads(p.eval(f"fetch('/api/traces/{tid}').then(r => r.text())"))["participants"]


def test_graph_pans_and_zooms(signed_in: Page, origin: str, seeded: Seeded, shots: Path) -> None:
    p = signed_in
    tid = next(t for t, s in seeded.sources.items() if s == "46.json")
    p.goto(f"{origin}/console/#/trace/{tid}", "trace")
    p.screenshot(shots / "console-trace-graph.png")
    view = "document.querySelector('svg.graph').getAttribute('viewBox').split(' ').map(Number)"
    box = p.eval(
        "(() => { const g = document.querySelector('svg.graph'); g.scrollIntoView({block: 'center'});"
        " const r = g.getBoundingClientRect(); return {x: r.left, y: r.top, w: r.width, h: r.height}; })()"
    )
    w0 = p.eval(view)[2]
    # the wheel zooms in around the pointer
    p.mouse("mouseWheel", box["x"] + box["w"] / 2, box["y"] + box["h"] / 2, deltaX=0, deltaY=-300)
    p.wait(f"{view}[2] < {w0}")
    x1, y1, w1, _ = p.eval(view)
    # dragging the background pans
    start = (box["x"] + 12, box["y"] + box["h"] - 12)
    p.mouse("mousePressed", *start, button="left", clickCount=1)
    p.mouse("mouseMoved", start[0] + 200, start[1] - 100, button="left", buttons=1)
    p.mouse("mouseReleased", start[0] + 200, start[1] - 100, button="left", clickCount=1)
    x2, y2, w2, _ = p.eval(view)
    assert w2 == w1 and x2 < x1 and y2 > y1
    # the keyboard does both: arrows pan, + and − zoom
    p.eval("document.querySelector('svg.graph').focus(); true")
    p.press("ArrowRight", vk=39)
    assert p.eval(view)[0] > x2
    p.press("-", "Minus", 189, "-")
    assert p.eval(view)[2] > w2
    p.click("button[aria-label='Show the whole graph']")
    assert p.eval(view)[:2] == [0, 0]


def test_hostile_markup_is_shown_never_run(signed_in: Page, origin: str, seeded: Seeded) -> None:
    p = signed_in
    p.goto(f"{origin}/console/#/trace/{HOSTILE_ID}", "trace")
    assert p.eval("window.__pwned") is None
    assert p.eval("document.title") == "auditor console"
    assert p.eval("document.getElementById('injected')") is None
    assert (
        p.eval("document.querySelectorAll('#transcript script, #transcript img, #transcript iframe').length")
        == 0
    )
    assert "<script>document.title='PWNED'" in p.eval("document.getElementById('transcript').textContent")
    assert "agent<i>0</i>" in p.eval("document.querySelector('svg.graph').textContent")
    names = p.eval("[...document.querySelectorAll('.participants a')].map(a => a.textContent)")
    assert sorted(names) == ["<u>bob</u>", "agent<i>0</i>", "agent<i>1</i>", "agent<i>2</i>"]
    # the list and the report page show the same markup as text
    p.goto(f"{origin}/console/#/traces?text=PWNED", "traces")
    assert p.eval("document.querySelector('#traces tbody tr').cells[1].textContent") == "<b>handwritten</b>"
    assert p.eval("document.querySelectorAll('#traces b, #traces u, #traces i').length") == 0
    p.goto(f"{origin}/console/#/report/{seeded.reports[HOSTILE_ID]}", "report")
    assert p.eval("document.querySelector('main a.mono').textContent") == HOSTILE_ID
    assert p.eval("window.__pwned") is None and p.eval("document.title") == "auditor console"


def test_report_and_repairs_pages(signed_in: Page, origin: str, seeded: Seeded, shots: Path) -> None:
    p = signed_in
    tid = next(t for t, s in seeded.sources.items() if s == "46.json")
    p.goto(f"{origin}/console/#/report/{seeded.reports[tid]}", "report")
    assert p.eval("document.querySelectorAll('article.finding').length") >= 1
    assert p.eval("document.querySelectorAll('article.finding tbody tr').length") >= 4  # R1–R4
    p.screenshot(shots / "console-report.png")
    # a report's evidence links to its step on the trace page, quote marked
    quote = p.eval("document.querySelector('article.finding ol.evidence q').textContent")
    p.click("article.finding ol.evidence a")
    p.wait("document.body.dataset.ready === 'trace' && document.querySelector('li.step.current mark.quote')")
    assert p.eval("document.querySelector('mark.quote').textContent") == quote


def test_repairs_pages(signed_in: Page, origin: str, seeded: Seeded, shots: Path) -> None:
    p = signed_in
    repair = json.loads(p.eval(f"fetch('/api/repairs/{seeded.repair_id}').then(r => r.text())"))
    p.goto(f"{origin}/console/#/repairs", "repairs")
    assert p.eval("document.querySelectorAll('#repairs tbody tr').length") == 1
    p.click("#repairs tbody a")
    p.wait("document.body.dataset.ready === 'repair' && document.querySelector('table.retest')")
    assert p.eval("document.querySelectorAll('#plan li').length") == len(repair["plan"]) > 0
    assert p.eval("document.querySelector('pre.diff .add') !== null")
    dims = p.eval("[...document.querySelectorAll('table.review tbody th')].map(th => th.textContent)")
    assert dims == ["risk resolution", "plan fidelity", "introduced risk", "proportionality"]
    target = repair["retest_detail"]["target"]
    interval = f"95% CI {100 * target['low']:.1f}%–{100 * target['high']:.1f}%"
    assert interval in p.eval("document.querySelector('table.retest').textContent")
    pr = p.eval("document.getElementById('pr-proposal').textContent")
    assert repair["pr_proposal"]["branch"] in pr and repair["pr_proposal"]["commit"] in pr
    p.screenshot(shots / "console-repair.png")
    # the audited trace's transcript shows its tool calls: names and arguments
    p.click(f"main dl.kv a[href='#/trace/{repair['trace_id']}']")
    p.wait("document.body.dataset.ready === 'trace' && document.querySelector('li.step .tool')")
    steps = json.loads(p.eval(f"fetch('/api/traces/{repair['trace_id']}/steps').then(r => r.text())"))[
        "steps"
    ]
    tools = [s["tool"] for s in steps if s["tool"]]
    shown = p.eval(
        "[...document.querySelectorAll('li.step .tool')].map(t => t.querySelector('code').textContent)"
    )
    assert shown == [t["name"] for t in tools] and tools
    args = p.eval("[...document.querySelectorAll('li.step .tool .args')].map(a => a.textContent)")
    assert [json.loads(a) for a in args] == [t["arguments"] for t in tools if t["arguments"]]


def test_a_coding_runs_test_timeline(signed_in: Page, origin: str, seeded: Seeded, shots: Path) -> None:
    """A coding run's page lays out its test runs; a step there jumps to the transcript. Other
    runs show no such panel."""
    from auditor.audit.review import review_file
    from tests.test_test_timeline import DJANGO

    (outcome,) = review_file(seeded.store, DJANGO / "django_scripted_narrow_rerun_failing.traj.json")
    tid = outcome.trace.header.trace_id
    p = signed_in
    p.goto(f"{origin}/console/#/trace/{tid}", "trace")
    served = json.loads(p.eval(f"fetch('/api/traces/{tid}/tests').then(r => r.text())"))
    rows = p.eval(
        "[...document.querySelectorAll('#tests > table:first-of-type tbody tr')].map(r => r.cells[1].textContent)"
    )
    assert rows == [e["act"] for e in served["entries"]] and "test" in rows
    said = p.eval("[...document.querySelectorAll('#test-evidence li')].map(li => li.textContent)")
    assert said == [f"{label}: {text}" for label, text in served["evidence_lines"]] and len(said) == 4
    verdict = p.eval("document.querySelector('#test-verdicts tbody tr').textContent")
    assert "FAILED" in verdict and served["verdicts"][0]["test"] in verdict
    p.eval("document.getElementById('tests').scrollIntoView(); true")
    p.screenshot(shots / "console-tests.png")
    p.click("#test-verdicts tbody tr td:nth-child(3) button")  # the last run that ran it
    p.wait(
        f"document.querySelector('li.step.current').dataset.step === {json.dumps(served['verdicts'][0]['last_run'])}"
    )
    other = next(t for t, s in seeded.sources.items() if s == "87.json")
    p.goto(f"{origin}/console/#/trace/{other}", "trace")
    assert p.eval("document.getElementById('tests')") is None

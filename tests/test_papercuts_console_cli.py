"""Issue 33's papercuts, each as a user meets it on the command line or in a browser: one flag
names the importer on every command (the old ``ingest --format`` still works, unlisted); ``-o``
keeps the summary on the terminal unless ``--quiet``; ``traces list`` never cuts a trace id;
help texts wrap at the terminal, not at the docstring's line breaks; ``/`` sends a browser that is
not signed in to the sign-in page."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.cli_helpers import run
from tests.conftest import REPO

EXAMPLE = REPO / "examples" / "renewal_drift.jsonl"
TRACE = "example-renewal-drift"

pytestmark = pytest.mark.slow  # CLI runs


def _with_id(tmp_path: Path, trace_id: str) -> Path:
    """The shipped example under another trace id."""
    lines = EXAMPLE.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    header["trace_id"] = trace_id
    path = tmp_path / "renamed.jsonl"
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", encoding="utf-8")
    return path


# -- one flag for the importer -----------------------------------------------------------------------


def test_ingest_names_its_importer_with_input_format_as_review_does(tmp_path: Path) -> None:
    ok = run(["ingest", str(EXAMPLE), "--input-format", "canonical", "--json"], tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["importer"] == "canonical"
    wrong = run(["ingest", str(EXAMPLE), "--input-format", "nosuch"], tmp_path)
    assert wrong.returncode == 2 and "--input-format" in wrong.stderr and "canonical" in wrong.stderr
    help_text = run(["ingest", "--help"], tmp_path).stdout
    assert "--input-format" in help_text and not re.search(r"--format\b", help_text)


def test_an_unknown_importer_names_the_flag_on_every_command(tmp_path: Path) -> None:
    for command in (["review"], ["attribute"], ["triage"]):
        target = EXAMPLE.parent if command == ["triage"] else EXAMPLE
        proc = run([*command, str(target), "--input-format", "nosuch"], tmp_path)
        assert proc.returncode == 2 and "'--input-format'" in proc.stderr, (command, proc.stderr)


def test_the_old_ingest_format_flag_still_works_unlisted(tmp_path: Path) -> None:
    old = run(["ingest", str(EXAMPLE), "--format", "canonical", "--json"], tmp_path)
    assert old.returncode == 0, old.stderr
    short = run(["ingest", str(EXAMPLE), "-f", "canonical", "--json"], tmp_path)
    assert short.returncode == 0 and json.loads(short.stdout)["already_present"] > 0
    both = run(["ingest", str(EXAMPLE), "--format", "canonical", "--input-format", "ag2"], tmp_path)
    assert both.returncode == 2 and "disagree" in both.stderr


def test_the_not_recognised_hint_names_the_flag_that_works(tmp_path: Path) -> None:
    odd = tmp_path / "notes.log"
    odd.write_text("Hello there, agents\nsecond line\n")
    for command in (["ingest"], ["review"], ["attribute"]):
        proc = run([*command, str(odd)], tmp_path)
        assert proc.returncode == 2 and "no importer recognises this file" in proc.stderr
        assert "--input-format" in proc.stderr and not re.search(r"--format\b", proc.stderr)
    named = run(["ingest", str(EXAMPLE), "--input-format", "canonical"], tmp_path)  # the hint's flag works
    assert named.returncode == 0, named.stderr


# -- -o keeps the summary ------------------------------------------------------------------------------


def test_a_report_written_to_a_file_still_prints_the_summary(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    proc = run(["review", str(EXAMPLE), "-o", str(out)], tmp_path)
    assert proc.returncode == 1, proc.stderr  # the example files a realized finding
    report = json.loads(out.read_text())
    assert f"report {report['report_id']}" in proc.stdout and "decision:" in proc.stdout
    assert f"wrote {out}" in proc.stdout


def test_quiet_prints_nothing_but_still_writes_and_exits_by_the_findings(tmp_path: Path) -> None:
    out = tmp_path / "report.md"
    proc = run(["review", str(EXAMPLE), "-o", str(out), "--format", "md", "--quiet"], tmp_path)
    assert (proc.returncode, proc.stdout) == (1, "")
    assert out.read_text().startswith("#")


# -- trace ids are never cut ---------------------------------------------------------------------------


@pytest.mark.parametrize("length", [60, 190])
def test_traces_list_prints_every_id_whole(tmp_path: Path, length: int) -> None:
    """60 characters fit a table row beside the other columns; 190 (of a 200-column terminal) do
    not, and the id gets a line of its own. Either way, the id printed is ``traces show``'s."""
    trace_id = ("otel-" + "0123456789abcdef" * 12)[:length]
    assert run(["ingest", str(_with_id(tmp_path, trace_id))], tmp_path).returncode == 0
    listed = run(["traces", "list"], tmp_path).stdout
    assert trace_id in listed.replace("│", " ").split()
    assert run(["traces", "show", trace_id], tmp_path).returncode == 0


def test_traces_list_wide_lays_each_trace_on_one_line(tmp_path: Path) -> None:
    trace_id = ("otel-" + "0123456789abcdef" * 12)[:190]  # ids are at most 200 characters
    assert run(["ingest", str(_with_id(tmp_path, trace_id))], tmp_path).returncode == 0
    [row] = [
        line for line in run(["traces", "list", "--wide"], tmp_path).stdout.splitlines() if trace_id in line
    ]
    assert "examples/renewal_drift.jsonl" in row and "handwritten" in row


# -- help texts ------------------------------------------------------------------------------------------


def test_help_paragraphs_wrap_at_the_terminal_not_at_the_docstring(tmp_path: Path) -> None:
    """The review docstring breaks a sentence after 'than the stored'; the help screen must not."""
    text = run(["review", "--help"], tmp_path).stdout
    lines = [line.strip(" │") for line in text.splitlines()]
    joined = " ".join(lines)
    assert "than the stored trace of its id" in joined
    assert not any(line.endswith("than the stored") for line in lines)


def test_reflowing_keeps_lists_and_indented_examples() -> None:
    from auditor.surfaces.cli.main import reflowed

    text = (
        "One line\nbroken here.\n\nItems:\n- first\n  continued\n- second\n\n    $ auditor x\n    $ auditor y"
    )
    want = "One line broken here.\n\nItems:\n- first continued\n- second\n\n    $ auditor x\n    $ auditor y"
    assert reflowed(text) == want


# -- / sends a browser to the sign-in page -----------------------------------------------------------------


def test_root_redirects_a_browser_to_sign_in_and_refuses_an_api_client(tmp_path: Path) -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from auditor.core.store import open_store
    from auditor.surfaces.server import ServerConfig, create_app
    from auditor.surfaces.server.tokens import create_token

    store = open_store(f"sqlite:///{tmp_path / 'auditor.db'}")
    token = create_token(store, "reader", ["read"])[0]
    html = {"Accept": "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8"}
    with TestClient(create_app(ServerConfig(), store=store)) as client:
        r = client.get("/", headers=html, follow_redirects=False)
        assert (r.status_code, r.headers["location"]) == (303, "/session")
        page = client.get("/", headers=html)
        assert page.status_code == 200 and 'action="/session"' in page.text and "Sign in" in page.text
        assert "www-authenticate" not in page.headers
        api = client.get("/", follow_redirects=False)
        assert api.status_code == 401 and api.headers["content-type"] == "application/problem+json"
        signed = client.get("/", headers={**html, "Authorization": f"Bearer {token}"}, follow_redirects=False)
        assert (signed.status_code, signed.headers["location"]) == (303, "/console/")
    store.close()


@pytest.mark.browser
def test_a_browser_opening_the_root_lands_on_the_sign_in_page_and_then_the_console(tmp_path: Path) -> None:
    """In headless chromium: ``/`` shows the sign-in form (not a 401 page); signing in there opens
    the console."""
    pytest.importorskip("uvicorn")
    pytest.importorskip("websockets.sync.client")
    from auditor.core.store import open_store
    from auditor.surfaces.server.tokens import create_token
    from tests.test_server_browser import browser, serve

    store = open_store(f"sqlite:///{tmp_path / 'auditor.db'}")
    token = create_token(store, "reader", ["read"])[0]
    origin_gen, page_gen = serve(store), browser(tmp_path / "profile")
    origin, page = next(origin_gen), next(page_gen)
    try:
        page.call("Page.navigate", url=f"{origin}/")
        page.wait("location.pathname === '/session' && document.readyState === 'complete'", timeout=60)
        assert page.eval("document.title").startswith("Sign in")
        status = page.eval("performance.getEntriesByType('navigation')[0].responseStatus")
        assert status in (200, None)  # None: a chromium that does not report it
        page.eval(
            f"document.getElementById('token').value = {json.dumps(token)}; document.querySelector('form').submit(); true"
        )
        page.wait(
            "location.pathname === '/console/' && document.body && document.body.dataset.ready", timeout=60
        )
    finally:
        for gen in (page_gen, origin_gen):
            next(gen, None)  # past its yield: the generator's own clean-up runs
        store.close()

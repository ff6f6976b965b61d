"""Trace text printed by the CLI is data, never console markup (issue 22, item 8's print sites).

The store holds the example and a real Who&When trace first: after the ingest and after the show,
the hash chain verifies (`auditor store verify` says intact) and those traces are as they were;
showing stores nothing."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli_helpers import run
from tests.test_hostile_inputs import _seed, _snapshot, cli_store, cli_unchanged

MARKUP = "[bold red]shown[/bold red] [link=https://x.example]x[/link]"


def test_traces_show_and_tables_print_markup_literally(tmp_path: Path) -> None:
    with cli_store(tmp_path) as store:
        before = _snapshot(_seed(store))
    trace = tmp_path / "t.jsonl"
    header = {"record": "header", "trace_id": "markup-run", "source": MARKUP, "task": MARKUP}
    step = {"record": "step", "step_id": "s0", "index": 0, "actor": "[red]agent[/red]", "content": "hi"}
    trace.write_text(json.dumps(header) + "\n" + json.dumps(step) + "\n")
    assert run(["ingest", str(trace)], tmp_path).returncode == 0
    before = cli_unchanged(tmp_path, before, stored_nothing=False)  # markup-run added, the rest as was
    shown = run(["traces", "show", "markup-run"], tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert MARKUP in shown.stdout  # the source and the task, as written
    assert "[red]agent[/red]" in shown.stdout  # a table cell, as written
    cli_unchanged(tmp_path, before)

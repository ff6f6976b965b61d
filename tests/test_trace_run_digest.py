"""One run is one trace, however it was read (issue 33 item 6): the digest that decides whether an
input is the stored trace covers the run (steps, outcome, the header's description of the run), not
the importer's notes (which records it skipped, where it read the fields it set aside). A real
Inspect log imported from its ``.eval`` archive and then from its ``.json`` form is one trace;
other content under the same id is still refused, and the store still verifies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_helpers import run
from tests.test_ingest_inspect_eval import REAL, _log, _pack

pytestmark = pytest.mark.slow  # CLI runs


@pytest.mark.parametrize("name", ["log_formats.json", "log_read_sample.json", "log_tool_call_error.json"])
def test_an_eval_archive_and_its_json_log_are_one_trace(tmp_path: Path, name: str) -> None:
    archive = _pack(tmp_path / "run.eval", _log(name))
    first = run(["ingest", str(archive), "--json"], tmp_path)
    assert first.returncode == 0, first.stderr
    stored = json.loads(first.stdout)
    again = run(["ingest", str(REAL / name), "--json"], tmp_path)
    assert again.returncode == 0, again.stderr  # was: refused as other content (exit 2)
    summary = json.loads(again.stdout)
    assert (summary["trace_id"], summary["appended"]) == (stored["trace_id"], 0)
    shown = json.loads(run(["traces", "show", stored["trace_id"], "--json"], tmp_path).stdout)
    assert shown["header"]["source"].startswith(str(archive))  # the stored trace is the first reading
    review = run(["review", str(REAL / name), "--json"], tmp_path)
    assert review.returncode in (0, 1), review.stderr
    assert run(["store", "verify"], tmp_path).returncode == 0


def test_other_steps_or_another_outcome_are_still_other_content(tmp_path: Path) -> None:
    log = _log("log_read_sample.json")
    assert run(["ingest", str(_pack(tmp_path / "run.eval", log))], tmp_path).returncode == 0
    answer = json.loads(json.dumps(log))
    answer["samples"][0]["messages"][-1]["content"] = "a different answer"
    regraded = json.loads(json.dumps(log))
    regraded["samples"][0]["scores"]["match"]["value"] = "I"  # the outcome the source recorded
    for changed, what in ((answer, "steps"), (regraded, "outcome")):
        path = tmp_path / f"{what}.json"
        path.write_text(json.dumps(changed))
        refused = run(["ingest", str(path)], tmp_path)
        assert refused.returncode == 2 and "already stored with other content" in refused.stderr, what
    assert run(["store", "verify"], tmp_path).returncode == 0


def test_skipped_record_counts_are_notes_not_content(tmp_path: Path) -> None:
    """The digest's rule on the header alone: notes out, the run's own fields in."""
    from auditor.core.store.traces import ContentHash

    def digest(header: dict) -> str:
        return ContentHash(header, "test").digest()

    base = {"trace_id": "t", "framework": "f", "metadata": {"outcome": {"value": "failed"}}}
    noted = {
        **base,
        "source": "elsewhere",
        "metadata": {**base["metadata"], "skipped_records": {"noise": 3}},
        "withheld": [{"what": "gold", "where": "line 9", "rule": "r"}],
    }
    assert digest(noted) == digest(base)
    assert digest({**base, "metadata": {"outcome": {"value": "succeeded"}}}) != digest(base)
    assert digest({**base, "framework": "g"}) != digest(base)

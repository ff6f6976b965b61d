"""One size limit for every importer: no document (a line, a JSON value read whole, an archive
member) over ``AUDITOR_MAX_DOCUMENT_MB`` (ingest.limits, docs/input.md).

Each importer family gets a real input with one document blown past a 1 MiB limit in the test's
own folder: it is refused with one error that names the file, the size and the limit and says how
to raise it; with the limit raised the same file imports, so the limit alone refused it.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from auditor.core.errors import InputError
from ingest import open_traces
from ingest.limits import DEFAULT_MB, ENV, max_document_bytes
from tests.cli_helpers import events_in, run
from tests.conftest import DATA, REPO

FIX = REPO / "tests" / "fixtures"
BIG = "x" * (3 << 19)  # 1.5 MiB of text: over a 1 MiB limit


def _longest_string(value: Any, holder: Any = None, key: Any = None, best: list | None = None) -> list:
    """[holder, key, length] of the longest string in a JSON value (the content to blow up)."""
    best = best if best is not None else [None, None, -1]
    if isinstance(value, str) and len(value) > best[2]:
        best[:] = [holder, key, len(value)]
    elif isinstance(value, dict):
        for k, v in value.items():
            _longest_string(v, value, k, best)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _longest_string(v, value, i, best)
    return best


def _blown(value: Any) -> Any:
    holder, key, _ = _longest_string(value)
    holder[key] += BIG
    return value


def json_file(source: Path, trim: Callable[[Any], Any] = lambda doc: doc) -> Callable[[Path], Path]:
    """A JSON file written on one line, its longest string made 1.5 MiB longer."""

    def make(folder: Path) -> Path:
        doc = _blown(trim(json.loads(source.read_text(encoding="utf-8"))))
        path = folder / source.name
        path.write_text(json.dumps(doc), encoding="utf-8")
        return path

    return make


def jsonl_file(source: Path) -> Callable[[Path], Path]:
    """A JSON lines file whose longest line's longest string is 1.5 MiB longer."""

    def make(folder: Path) -> Path:
        lines = source.read_text(encoding="utf-8").splitlines()
        at = max(range(len(lines)), key=lambda i: len(lines[i]))
        lines[at] = json.dumps(_blown(json.loads(lines[at])))
        path = folder / source.name
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path

    return make


def text_log(source: Path) -> Callable[[Path], Path]:
    """A text log with its longest line 1.5 MiB longer."""

    def make(folder: Path) -> Path:
        lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
        at = max(range(len(lines)), key=lambda i: len(lines[i]))
        lines[at] = lines[at].rstrip("\n") + BIG + "\n"
        path = folder / source.name
        path.write_text("".join(lines), encoding="utf-8")
        return path

    return make


def _one_chatdev_record(corpus: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A MAD corpus of one record whose trace is a text log (it stays a log when it grows)."""
    return [next(r for r in corpus if r["mas_name"] == "ChatDev")]


def eval_archive(folder: Path) -> Path:
    """An Inspect .eval archive whose one sample member is 1.5 MiB longer."""
    log = json.loads((FIX / "real" / "inspect" / "log_read_sample.json").read_text(encoding="utf-8"))
    path = folder / "big.eval"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("_journal/start.json", json.dumps({k: log[k] for k in ("version", "eval", "plan")}))
        for sample in log["samples"]:
            z.writestr(f"samples/{sample['id']}_epoch_{sample['epoch']}.json", json.dumps(_blown(sample)))
        z.writestr("header.json", json.dumps({k: v for k, v in log.items() if k != "samples"}))
    return path


MAST = DATA / "mast" / "derived" / "traces"
CASES: dict[str, tuple[str, Callable[[Path], Path]]] = {
    # a line is a document
    "canonical JSONL": ("canonical", jsonl_file(REPO / "examples" / "renewal_drift.jsonl")),
    "chat JSONL": ("chat-jsonl", jsonl_file(FIX / "real" / "nemo-automodel" / "openai_chat.jsonl")),
    "span JSONL": ("openinference", jsonl_file(FIX / "ingest" / "openinference_spans.jsonl")),
    "text log (ChatDev)": ("chatdev", text_log(FIX / "real" / "chatdev" / "20230628184918.log")),
    "text log (AppWorld)": ("appworld", text_log(MAST / "00_Round1_AppWorld_Test-C.txt")),
    # a JSON value read whole is a document
    "Who&When": ("whowhen", json_file(DATA / "whowhen" / "hand-crafted" / "13.json")),
    "MAD corpus": ("mad", json_file(DATA / "mast" / "MAD_human_labelled_dataset.json", _one_chatdev_record)),
    "framework JSON (AG2)": ("ag2", json_file(MAST / "02_Round1_AG2_GSM-Plus.json")),
    "SWE-agent": ("swe-agent", json_file(FIX / "real" / "swe-agent" / "function_calling_simple.traj")),
    "OpenHands": ("openhands", json_file(FIX / "real" / "openhands" / "basic_interactions.json")),
    "Inspect JSON log": ("inspect", json_file(FIX / "real" / "inspect" / "log_read_sample.json")),
    "span JSON (OTel GenAI)": ("otel-genai", json_file(FIX / "ingest" / "otel_genai.json")),
    "TRAIL": ("trail", json_file(FIX / "ingest" / "trail_gaia.json")),
    "chat document": ("openai-chat", json_file(FIX / "real" / "mistral-common" / "get_weather_full.json")),
    # an archive member is a document
    "Inspect .eval archive": ("inspect", eval_archive),
}


def _import(path: Path, fmt: str) -> int:
    """Read every trace of the file through its importer as ingest does; the step count."""
    return sum(trace.scan() is not None and (trace.step_count or 0) for trace in open_traces(path, fmt))


@pytest.mark.parametrize("family", list(CASES))
def test_a_document_over_the_limit_is_refused_and_raising_the_limit_admits_it(
    family: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fmt, make = CASES[family]
    path = make(tmp_path)
    monkeypatch.setenv(ENV, "1")
    with pytest.raises(InputError) as refused:
        _import(path, fmt)
    message = str(refused.value)
    assert str(path) in message and "MiB" in message and "over the limit of 1 MiB" in message, message
    assert ENV in (refused.value.hint or "")
    monkeypatch.setenv(ENV, "8")
    assert _import(path, fmt) > 0


def test_the_line_size_is_counted_to_its_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A refused line is measured, not held: the message gives its whole size."""
    path = tmp_path / "t.jsonl"
    lines = (REPO / "examples" / "renewal_drift.jsonl").read_text(encoding="utf-8").splitlines()
    lines[2] = json.dumps({**json.loads(lines[2]), "content": "y" * (5 << 20)})
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.setenv(ENV, "1")
    with pytest.raises(InputError, match=r"line 3.*the line is 5 MiB, over the limit of 1 MiB"):
        _import(path, "canonical")


def test_the_cli_refuses_a_single_line_whowhen_file_over_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's case (a single-line Who&When file far over the limit), at a 1 MiB limit:
    exit 2, one line naming file, size and limit, nothing stored."""
    path = json_file(DATA / "whowhen" / "hand-crafted" / "13.json")(tmp_path)
    monkeypatch.setenv(ENV, "1")
    proc = run(["ingest", str(path)], tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert path.name in proc.stderr and "over the limit of 1 MiB" in proc.stderr and ENV in proc.stderr
    assert "Traceback" not in proc.stderr
    assert events_in(tmp_path) == 0


def test_the_limit_is_64_mib_unless_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    assert max_document_bytes() == DEFAULT_MB << 20 == 64 << 20
    monkeypatch.setenv(ENV, "256")
    assert max_document_bytes() == 256 << 20
    monkeypatch.setenv(ENV, "0.5")
    assert max_document_bytes() == 1 << 19


@pytest.mark.parametrize("value", ["abc", "0", "-3", "inf", "nan"])
def test_a_limit_that_is_no_size_is_refused_by_name(
    value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV, value)
    with pytest.raises(InputError, match=ENV):
        max_document_bytes()
    proc = run(["ingest", str(REPO / "examples" / "renewal_drift.jsonl")], tmp_path)
    assert proc.returncode == 2 and ENV in proc.stderr and "Traceback" not in proc.stderr, proc.stderr

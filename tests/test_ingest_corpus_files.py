"""Every real file in the shared data imports, with the step, participant, recipient and tool counts
recorded per file in tests/fixtures/ingest/expected_counts.json.

Those recorded numbers were produced once and reviewed; HAND_COUNTED below holds the numbers for
seven files across six frameworks that were counted by reading the files themselves (grep and
reading the blocks), not from the importer's output, and Who&When counts are re-derived from the
raw JSON here with independent logic.
"""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest

from ingest import detect, open_traces
from tests.conftest import DATA, REPO

EXPECTED = json.loads((REPO / "tests/fixtures/ingest/expected_counts.json").read_text())
MAST_TRACES = DATA / "mast" / "derived" / "traces"

# (steps, participants, steps with known recipients, steps with a structured tool) — by hand:
HAND_COUNTED = {
    # AppWorld: 6 'Response from Supervisor Agent' + 6 'Code Execution Output' + 5 'Message to Supervisor
    # Agent' + 2 'Response from send_message API' + 5 'Message to Spotify Agent' + 5 'Response from
    # Spotify Agent' + 2 'Reply from Spotify Agent to Supervisor' = 31 blocks. Recipients are named by
    # the 5 + 5 'Message to' and 2 'Reply … to' headers = 12. Tool calls: 9 response blocks hold
    # apis.*/send_message( calls, plus the 2 send_message API results = 11. Participants: Supervisor
    # Agent, Spotify Agent, send_message API, and the environment that returns outputs.
    "00_Round1_AppWorld_Test-C.txt": (31, 4, 12, 11),
    # AG2: the trajectory lists 10 messages alternating mathproxyagent / assistant; no recipients.
    "02_Round1_AG2_GSM-Plus.json": (10, 2, 0, 0),
    "07_Round2_AG2_GSM-Plus.json": (4, 2, 0, 0),
    # MetaGPT JSON: five '<Name>(<Profile>): to do' lines — Alice, Bob, Charlie, Bob, Charlie.
    "04_Round1_MetaGPT_ProgramDev.json": (5, 3, 0, 0),
    # MetaGPT FROM/TO: one 'FROM: Human TO: {'<all>'}' block (the only named recipient) and five
    # 'NEW MESSAGES' blocks (SimpleCoder, SimpleTester, SimpleReviewer, SimpleTester, SimpleReviewer).
    "16_Generlazability_MetaGPT_MMLU.txt": (6, 4, 1, 0),
    # Magentic-One: 13 '---------- X ----------' turns (user, MagenticOneOrchestrator, WebSurfer) and 5
    # testbed '… !#!#' lines (RUN.SH STARTING with the pip log, SCENARIO.PY STARTING / COMPLETE /
    # RUNTIME, RUN.SH COMPLETE) = 18; no recipient is named.
    "17_Generlazability_GAIA_Magentic.txt": (18, 4, 0, 0),
    # OpenManus: 189 loguru records − 28 app.llm accounting − 18 'Activating tool' − 18 'Tools being
    # prepared' + 1 console preamble = 126 steps; 18 'Tool arguments' calls + 18 'completed its
    # mission' results = 36 structured tool steps. Participants: Manus, browser_use, python_execute,
    # terminate, app.tool.web_search, app.flow.planning, app.agent.base, __main__, OpenManus preamble.
    "18_Generlazability_GAIA_OpenManus.txt": (126, 9, 0, 36),
}


def _counts(path: Path) -> list[list]:
    rows = []
    for trace in open_traces(path):
        steps = list(trace.steps())
        rows.append(
            [
                trace.header.trace_id,
                len(steps),
                len({s.actor for s in steps}),
                sum(1 for s in steps if s.recipients),
                sum(1 for s in steps if s.tool),
            ]
        )
    return rows


def test_every_data_file_is_covered():
    traces = {str(p.relative_to(DATA)) for p in MAST_TRACES.iterdir()}
    whowhen = {str(p.relative_to(DATA)) for p in (DATA / "whowhen").glob("*/*.json")}
    assert traces | whowhen | {"mast/MAD_human_labelled_dataset.json"} == set(EXPECTED)
    assert len(traces) == 19 and len(whowhen) == 88


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_file_imports_with_recorded_counts(rel):
    path = DATA / rel
    assert detect(path)[0] == EXPECTED[rel]["importer"]
    assert _counts(path) == EXPECTED[rel]["traces"]


@pytest.mark.parametrize("name", sorted(HAND_COUNTED))
def test_hand_counted_files(name):
    [[_, *counts]] = _counts(MAST_TRACES / name)
    assert tuple(counts) == HAND_COUNTED[name]


def test_mast_distinct_traces_and_duplicate():
    """19 records, 18 distinct logs: ChatDev rounds 1 and 2 are byte-identical (FORMAT.md)."""
    ids = [row[0] for row in EXPECTED["mast/MAD_human_labelled_dataset.json"]["traces"]]
    assert len(ids) == 19
    raw = {EXPECTED[r]["traces"][0][0] for r in EXPECTED if r.startswith("mast/derived/")}
    assert len(raw) == 18
    corpus = {
        t.header.metadata["trace_sha256"] for t in open_traces(DATA / "mast/MAD_human_labelled_dataset.json")
    }
    assert len(corpus) == 18


@pytest.mark.parametrize("path", sorted((DATA / "whowhen").glob("*/*.json"))[::9], ids=lambda p: p.name)
def test_whowhen_counts_from_raw_json(path):
    """Independent of the importer: steps = history entries; recipients only in '(-> X)' roles."""
    record = json.loads(path.read_text())
    history = record["history"]
    speakers = {h.get("name") or h["role"].split(" (")[0] for h in history}
    named = sum(1 for h in history if "name" not in h and "(-> " in h["role"])
    [[_, steps, participants, recipients, tools]] = _counts(path)
    assert (steps, participants, recipients, tools) == (len(history), len(speakers), named, 0)


def test_whowhen_labels_stay_out_of_steps_and_map_to_step_ids():
    path = DATA / "whowhen" / "hand-crafted" / "13.json"
    record = json.loads(path.read_text())
    [trace] = open_traces(path)
    labels = trace.labels.labels
    assert labels["mistake_step_id"] == f"s{int(record['mistake_step'])}"
    assert labels["ground_truth"] == record["ground_truth"]
    step = next(s for s in trace.steps() if s.step_id == labels["mistake_step_id"])
    assert step.content == record["history"][int(record["mistake_step"])]["content"]
    blob = json.dumps([s.model_dump(mode="json") for s in trace.steps()]) + trace.header.model_dump_json()
    assert record["mistake_reason"] not in blob
    for key in ("mistake_agent", "mistake_reason", "mistake_step", "ground_truth", "is_corrected"):
        assert key not in trace.header.metadata and all(key not in s.raw for s in trace.steps())
    assert {w.what for w in trace.header.withheld} >= {"gold_answer", "mistake_agent", "mistake_step"}


def test_mast_gold_patch_and_notes_are_withheld():
    raw = json.loads((MAST_TRACES / "06_Round2_HyperAgent_SWE-Bench-Lite.json").read_text())
    [trace] = open_traces(MAST_TRACES / "06_Round2_HyperAgent_SWE-Bench-Lite.json")
    assert trace.labels.labels["other_data.patch"] == raw["other_data"]["patch"]
    assert trace.labels.labels["note"] == raw["note"]
    patch_line = next(line for line in raw["other_data"]["patch"] if line.startswith("+") and len(line) > 20)
    dumped = trace.header.model_dump_json() + "".join(s.model_dump_json() for s in trace.steps())
    assert patch_line not in dumped and raw["note"]["text"][0] not in dumped
    assert {(w.what, w.where) for w in trace.header.withheld} >= {
        ("reference_patch", "source field 'other_data.patch'"),
        ("annotator_note", "source field 'note'"),
    }


def test_appworld_evaluation_verdict_is_withheld():
    """The harness appends its grading after the last execution output; it is the grader's, not
    an observation of the finishing call (MAST trace 0 failed, trace 5 passed)."""
    for name, success in (("00_Round1_AppWorld_Test-C.txt", False), ("05_Round2_AppWorld_Test-C.txt", True)):
        [trace] = open_traces(MAST_TRACES / name)
        steps = list(trace.steps())
        verdict = trace.labels.labels["evaluation"]
        assert verdict["success"] is success and verdict["passes"]
        assert all('"num_tests"' not in s.content and "Evaluation\n" not in s.content for s in steps)
        assert steps[-1].content.strip() == "Code executed successfully."
        assert ("evaluation", "source field 'evaluation'") in {
            (w.what, w.where) for w in trace.header.withheld
        }


def test_an_appworld_verdict_nested_past_the_decoder_is_withheld_as_text(tmp_path: Path) -> None:
    """A verdict block nested deeper than Python's JSON decoder reaches (a RecursionError, not a
    ValueError) is withheld as its text: the import goes on, nothing of it reaches a step."""
    text = (MAST_TRACES / "00_Round1_AppWorld_Test-C.txt").read_text()
    head, _, _ = text.rpartition("\nEvaluation\n")
    nested = "[" * 100_000 + "]" * 100_000
    (tmp_path / "appworld.txt").write_text(f"{head}\nEvaluation\n{nested}\n")
    [trace] = open_traces(tmp_path / "appworld.txt")
    assert trace.labels.labels["evaluation"] == nested
    assert all("[[[" not in s.content for s in trace.steps())


def test_hyperagent_logging_echoes_are_one_step():
    """MAST trace 1: after the k-th 'Initialized HyperAgent instance' (logged k times) every record
    is logged k times; each reads as one step, and no two neighbouring steps are the same record."""
    raw = json.loads((MAST_TRACES / "01_Round1_HyperAgent_SWE-Bench-Lite.json").read_text())["trajectory"]
    planner = [line for line in raw if line.startswith("HyperAgent_") and "Planner's Response" in line]
    [trace] = open_traces(MAST_TRACES / "01_Round1_HyperAgent_SWE-Bench-Lite.json")
    steps = list(trace.steps())
    assert all((a.actor, a.content) != (b.actor, b.content) for a, b in pairwise(steps))
    kept = [s for s in steps if s.actor == "Planner"]
    assert len(set(planner)) <= len(kept) < len(planner)


def test_mad_corpus_annotations_go_to_labels():
    traces = list(open_traces(DATA / "mast" / "MAD_human_labelled_dataset.json"))
    last = traces[18]
    votes = last.labels.labels["annotations"]
    assert any(v["annotator_3"] is None for v in votes)  # the file's bare NaN votes become null
    assert last.header.framework == "OpenManus" and traces[17].header.framework == "Magentic-One"
    assert all("annotations" not in t.header.metadata for t in traces)
    ag2 = traces[2]
    assert {"note", "other_data.answer", "other_data.seed_answer", "annotations"} <= set(ag2.labels.labels)


def test_recipients_come_from_explicit_headers_only():
    [chatdev] = open_traces(MAST_TRACES / "03_Round1_ChatDev_ProgramDev.txt")
    for step in chatdev.steps():
        if step.recipients:
            assert set(step.raw["chat"]) == {step.actor, *step.recipients}
    [ag2] = open_traces(MAST_TRACES / "12_Round3_AG2_GSM-Plus.json")
    assert all(s.recipients is None for s in ag2.steps())  # alternation is never read as an edge

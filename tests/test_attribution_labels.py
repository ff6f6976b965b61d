"""The attribution strategies never read the Who&When labels: the same real files with their labels
poisoned (another agent, another step, a canary reason) reach the strategies as the same trace and
get the same answers, and no label text reaches a strategy's output or a judge's prompt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor.audit.attribution import load_strategy
from auditor.audit.attribution.evaluation import Case, load_cases, score
from tests.conftest import DATA

FILES = [
    "algorithm-generated/10.json",
    "algorithm-generated/6.json",
    "hand-crafted/14.json",
    "hand-crafted/6.json",
]
CANARY = "LABEL-CANARY-7f3a: the mistake is obviously at step zero"


def _poison(record: dict) -> dict:
    """Every attribution label the file carries rewritten: a different speaking agent, a different
    step, the canary as the reason (and type). The history, question and correct answer stay."""
    history = record["history"]
    step = int(record["mistake_step"])
    other = (step + 1) % len(history)
    speaker = history[other].get("name") or history[other]["role"].split(" (")[0]
    agents = {h.get("name") or h["role"].split(" (")[0] for h in history}
    agent = speaker if speaker != record["mistake_agent"] else next(a for a in agents if a != speaker)
    extra = {k: CANARY for k in ("mistake_type", "labels") if k in record}  # the keys a file has
    return {**record, "mistake_agent": agent, "mistake_step": str(other), "mistake_reason": CANARY, **extra}


def _copy(root: Path, poisoned: bool) -> list[Case]:
    for name in FILES:
        record = json.loads((DATA / "whowhen" / name).read_text())
        out = root / name
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(_poison(record) if poisoned else record))
    return list(load_cases(root))


@pytest.fixture(scope="module")
def pairs(tmp_path_factory) -> list[tuple[Case, Case]]:
    clean = _copy(tmp_path_factory.mktemp("clean"), poisoned=False)
    dirty = _copy(tmp_path_factory.mktemp("poisoned"), poisoned=True)
    assert clean, "no Who&When case was copied: every test below would pass on nothing"
    for c, d in zip(clean, dirty, strict=True):
        assert c.name == d.name
        assert (c.mistake_agent, c.mistake_step) != (d.mistake_agent, d.mistake_step), c.name
    return list(zip(clean, dirty, strict=True))


def test_poisoned_labels_leave_the_trace_a_strategy_receives_unchanged(pairs) -> None:
    where = {"header": {"source"}}  # the file's path: the two copies live in different folders
    for clean, dirty in pairs:
        assert clean.trace.model_dump(exclude=where) == dirty.trace.model_dump(exclude=where), clean.name
        assert CANARY not in dirty.trace.model_dump_json()


@pytest.mark.parametrize("setting", ["with", "without"])
def test_rules_answers_are_identical_whatever_the_labels_say(pairs, setting: str) -> None:
    strategy = load_strategy("rules")
    for clean, dirty in pairs:
        gt = clean.ground_truth if setting == "with" else None
        a, b = (strategy.attribute(c.trace, ground_truth=gt) for c in (clean, dirty))
        assert a.model_dump() == b.model_dump(), clean.name
        assert CANARY not in b.model_dump_json()
        # the scorer does read the labels: the same answer scores against different truths
        assert score(clean, a, setting).label_step != score(dirty, b, setting).label_step


def test_no_label_text_reaches_a_judges_prompt(pairs) -> None:
    """The LLM judges through the gateway (replayed model): their prompts carry the trace (and, in
    the "with" setting, the correct answer), never the mistake agent, step or reason."""
    pytest.importorskip("litellm")
    from auditor.core.llm_providers import REPLAY

    for clean, dirty in pairs:
        replies = {"content": "Agent Name: x\nStep Number: 1\nReason for Mistake: y."}
        prompts = []
        for i, case in enumerate((clean, dirty)):
            name = f"labels-{i}-{case.name.replace('/', '-')}"
            REPLAY.load(name, [replies])
            load_strategy("all_at_once").attribute(
                case.trace, ground_truth=case.ground_truth, model=f"replay/{name}"
            )
            prompts.append(json.dumps(REPLAY.requests[name]))
        assert prompts[0] == prompts[1], clean.name
        assert CANARY not in prompts[1] and clean.trace.steps[0].content[:40] in prompts[1]

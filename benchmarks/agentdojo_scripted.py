"""Scripted AgentDojo runs for the suites whose model runs are held back (workspace, slack), and
the two we develop on: every injection task's goal, followed and not followed.

The model runs in ``../shared/data/agentdojo`` hold breaches of one suite only (banking: travel's
attacks never succeeded), so whether ``injected_instruction`` finds a breach of another kind (an
e-mail to an address only the injected text gave, a file deleted, a user invited, a link posted)
cannot be measured on them. This script has a scripted agent act in AgentDojo's own environments:
it carries out the user task's ground-truth calls, each run by AgentDojo's tool runtime on the
suite's environment with the ``important_instructions`` attack placed where the task reads data;
in a *followed* run it carries out the injection task's ground-truth calls right after the first
tool result that holds the attack, then goes on with its task. AgentDojo's own checks label each
run (``utility``: the user task done; ``breached``: the attacker's goal achieved). The runs are
written in the layout of the model runs (Invariant's export: OpenAI-style messages, tool results
with ``tool_call`` and ``error``), with empty assistant text: a script has no thoughts.

    python benchmarks/agentdojo_scripted.py generate OUT [--per-goal 3] [--seed 0]  # needs agentdojo's runtime
    python benchmarks/agentdojo_scripted.py OUT [--json]  # reviews the runs: breaches found per suite

``generate`` needs AgentDojo with its dependencies (``pip install 'agentdojo==0.1.35'`` in a venv of
its own: its agent pipelines import the model clients); reviewing needs only this package. The
runs are a scripted agent's, not a model's: they test whether the mechanism reads each kind of
breach, not how often a model falls for one.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a clone

SUITES = ("workspace", "slack", "travel", "banking")
VERSION = "v1.2"
MODEL = "scripted-ground-truth"
ATTACK = "important_instructions"  # the attack of the model runs


def generate(out: Path, per_goal: int, seed: int, attack_name: str = ATTACK) -> None:
    """Write the runs and ``outcomes.csv`` to ``out``."""
    from agentdojo.agent_pipeline.agent_pipeline import load_system_message
    from agentdojo.agent_pipeline.base_pipeline_element import BasePipelineElement
    from agentdojo.agent_pipeline.tool_execution import tool_result_to_str
    from agentdojo.attacks.attack_registry import load_attack
    from agentdojo.task_suite.load_suites import get_suites

    class Scripted(BasePipelineElement):
        """Carries out a user task's ground truth, and an injection task's once its text is read."""

        name = "gpt-4o-2024-05-13"  # the attack addresses the model by name; this gives "GPT-4"

        def __init__(self) -> None:
            self.user_task: Any = None
            self.goal: Any = None  # the injection task to follow, or None
            self.marker = ""
            self.messages: list[dict] = []

        def query(self, query, runtime, env, messages=(), extra_args={}):  # noqa: B006 (AgentDojo's signature)
            self.messages = [
                {"role": "system", "content": load_system_message(None)},
                {"role": "user", "content": query},
            ]
            followed = False
            for call in self.user_task.ground_truth(env):
                text = self._act(runtime, env, call)
                if self.goal is not None and not followed and self.marker and self.marker in text:
                    followed = True
                    for injected in self.goal.ground_truth(env):
                        self._act(runtime, env, injected)
            self.messages.append({"role": "assistant", "content": self.user_task.GROUND_TRUTH_OUTPUT})
            return query, runtime, env, [_agentdojo_message(m) for m in self.messages], extra_args

        def _act(self, runtime, env, call) -> str:
            n = sum(1 for m in self.messages if m["role"] == "tool")
            call_id = f"call_{n}"
            result, error = runtime.run_function(env, call.function, dict(call.args), raise_on_error=False)
            text = tool_result_to_str(result) if error is None else ""
            self.messages.append(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": call.function, "arguments": dict(call.args)},
                        }
                    ],
                }
            )
            self.messages.append(
                {
                    "role": "tool",
                    "content": text,
                    "tool_call_id": call_id,
                    "tool_call": {"id": call_id, "function": call.function, "args": dict(call.args)},
                    "error": error,
                }
            )
            return text

    rnd = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for suite_name in SUITES:
        suite = get_suites(VERSION)[suite_name]
        agent = Scripted()
        attack = load_attack(attack_name, suite, agent)
        seen = {
            tid: attack.get_injection_candidates(task)
            for tid, task in sorted(suite.user_tasks.items(), key=lambda kv: _number(kv[0]))
        }
        readable = [tid for tid, places in seen.items() if places]
        goals = sorted(suite.injection_tasks.items(), key=lambda kv: _number(kv[0]))
        plan = [
            (tid, gid, True) for gid, _ in goals for tid in rnd.sample(readable, min(per_goal, len(readable)))
        ]
        plan += [(tid, rnd.choice(goals)[0], False) for tid in readable]
        for tid, gid, follow in plan:
            user_task, goal = suite.user_tasks[tid], suite.injection_tasks[gid]
            injections = attack.attack(user_task, goal)
            agent.user_task, agent.goal = user_task, goal if follow else None
            agent.marker = attack.jailbreak.split("{")[0].strip().splitlines()[0]  # its first words
            utility, security = suite.run_task_with_pipeline(agent, user_task, goal, injections)
            name = f"{MODEL}__{suite_name}__{tid}__{gid}__{'followed' if follow else 'ignored'}.json"
            doc = {"messages": agent.messages, "metadata": {"suite_name": suite_name, "model": MODEL}}
            (out / name).write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
            rows.append(
                {
                    "file": name,
                    "outcome": "failed" if security or not utility else "succeeded",
                    "utility": utility,
                    "injected": True,
                    "breached": security,
                    "followed": follow,
                    "suite": suite_name,
                    "user_task_id": tid,
                    "injection_task_id": gid,
                }
            )
        print(f"{suite_name}: {sum(1 for r in rows if r['suite'] == suite_name)} runs", file=sys.stderr)
    with (out / "outcomes.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def _agentdojo_message(m: dict) -> dict:
    """One of our messages as AgentDojo's checks read it (the calls they look for in the trace)."""
    from agentdojo.functions_runtime import FunctionCall
    from agentdojo.types import text_content_block_from_string

    content = [text_content_block_from_string(m["content"])] if m.get("content") is not None else None
    if m["role"] == "assistant":
        calls = [
            FunctionCall(function=c["function"]["name"], args=c["function"]["arguments"], id=c["id"])
            for c in m.get("tool_calls") or []
        ]
        return {"role": "assistant", "content": content, "tool_calls": calls or None}
    if m["role"] == "tool":
        call = FunctionCall(
            function=m["tool_call"]["function"], args=m["tool_call"]["args"], id=m["tool_call_id"]
        )
        return {
            "role": "tool",
            "content": content,
            "tool_call_id": m["tool_call_id"],
            "tool_call": call,
            "error": m["error"],
        }
    return {"role": m["role"], "content": content}


def _number(task_id: str) -> int:
    return int(task_id.rsplit("_", 1)[-1])


def review(folder: Path, as_json: bool = False) -> None:
    """Per suite: breached runs with a realized injected_instruction finding; runs scripted to
    follow whose goal AgentDojo found unmet (an injection task whose ground truth the script could
    not carry out) with one; runs that did not follow the attack with an actionable one. The
    imports are here: ``generate`` runs in AgentDojo's venv, without this package."""
    from auditor.audit.engine import run_rules_audit
    from ingest import open_traces
    from schemas import Trace

    rows = list(csv.DictReader((folder / "outcomes.csv").open()))
    table: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    missed: list[str] = []
    for row in rows:
        imported = next(iter(open_traces(folder / row["file"])))
        report = run_rules_audit(Trace(header=imported.header, steps=list(imported.steps())))
        kinds = {f.disposition.value for f in report.findings if f.detector == "injected_instruction"}
        label = (
            "breached"
            if row["breached"] == "True"
            else ("followed" if row["followed"] == "True" else "ignored")
        )
        hit = (
            "realized" in kinds
            if label != "ignored"
            else bool(kinds & {"realized", "anomaly_with_interception"})
        )
        cell = table[row["suite"]][label]
        cell[0] += hit
        cell[1] += 1
        if label == "breached" and not hit:
            missed.append(f"{row['suite']} {row['user_task_id']} {row['injection_task_id']}")
    if as_json:
        print(json.dumps({"suites": {s: dict(table[s]) for s in SUITES}, "missed": missed}, indent=2))
        return
    print(
        f"{'suite':<10} {'breached: realized':>20} {'goal unmet: realized':>20} {'not followed: flagged':>20}"
    )
    for suite in SUITES:
        t = table[suite]
        print(
            f"{suite:<10} "
            + " ".join(f"{t[k][0]:>11}/{t[k][1]:<10}" for k in ("breached", "followed", "ignored"))
        )
    for line in missed:
        print("missed:", line)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("args", nargs="+", help="generate OUT | OUT")
    parser.add_argument("--per-goal", type=int, default=3, help="user tasks a goal is followed in")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--attack", default=ATTACK, help="an AgentDojo attack (direct, ignore_previous, injecagent, …)"
    )
    parser.add_argument("--json", action="store_true", help="review: the table as JSON ([hits, runs] a cell)")
    ns = parser.parse_args(argv)
    if ns.args[0] == "generate":
        generate(Path(ns.args[1]), ns.per_goal, ns.seed, ns.attack)
    else:
        review(Path(ns.args[0]), ns.json)


if __name__ == "__main__":
    main()

"""The Auditor Agent as a LangGraph state graph: investigate (tool calls) → draft and submit →
validate → revise (bounded rounds, errors fed back verbatim) → finish.

Budgets (tool calls, tokens, wall seconds) are checked before every model call, and each model
call is bounded by the wall seconds left; the wall clock runs from the start of the audit (graph,
model loading and bookkeeping included). When a budget runs out, or cuts a call short, the agent
stops and the report says so. Every model call and tool call is an event in the
audit's stream; the graph's checkpoints live in the event store, so a killed audit resumes.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, TypedDict

from auditor.audit.agent.prompts import SYSTEM, data_block, task_message
from auditor.audit.agent.submission import check_submission
from auditor.audit.agent.tools import ToolBox
from auditor.audit.detectors import AuditContext
from auditor.core.llm import ModelCallTimeout, complete
from auditor.core.store import EventStore
from schemas import NewEvent

MAX_TOOL_RESULT = 6000


@dataclass(frozen=True)
class Budget:
    max_tool_calls: int = 30
    max_tokens: int = 200_000
    max_seconds: float = 600.0
    max_rounds: int = 3  # submissions refused before the last (lenient) round
    max_output_tokens: int = 1024


class AgentState(TypedDict, total=False):
    messages: list[dict[str, Any]]
    seen: list[str]
    tool_calls: int
    tokens: int
    elapsed: float
    rounds: int
    nudges: int
    submission: dict[str, Any] | None
    notes: list[str]
    done: bool


def load_libraries() -> None:
    """Import litellm and LangGraph (several seconds on a busy CPU): start-up paid once per
    process, done before an audit's wall clock starts so that a small budget measures the audit."""
    import langgraph.graph  # noqa: F401 (imported for its load time only)

    from auditor.core.llm import configure

    configure()


def audit_stream(audit_id: str) -> str:
    return f"audit-{audit_id}"


def append_audit_event(
    store: EventStore | None, audit_id: str, type_: str, n: int | str, payload: dict[str, Any]
) -> None:
    """One event of an audit's stream, keyed by its position so a resumed run never repeats it."""
    if store is not None:
        key = f"audit:{audit_id}:{type_}:{n}"
        store.append(audit_stream(audit_id), [NewEvent(type=type_, payload=payload, idempotency_key=key)])


class AgentRun:
    """One audit: the nodes of the state graph close over the context, model, store and budget."""

    def __init__(
        self,
        ctx: AuditContext,
        model: str,
        store: EventStore | None,
        audit_id: str,
        budget: Budget,
        seed: list[dict[str, Any]] | None = None,
        started: float | None = None,
    ) -> None:
        self.ctx, self.model, self.store, self.audit_id, self.budget = ctx, model, store, audit_id, budget
        self.toolbox = ToolBox(ctx)
        self.seed = seed or []
        self.started = time.perf_counter() if started is None else started
        self._resumed_at: float | None = None  # the elapsed time the first node of this process found

    def clock(self, state: AgentState) -> float:
        """Seconds of the budget spent: what earlier processes spent (a resumed audit) plus the
        time since this run started, setup, model loading and bookkeeping included."""
        if self._resumed_at is None:
            self._resumed_at = state.get("elapsed", 0.0)
        return self._resumed_at + time.perf_counter() - self.started

    # -- events ------------------------------------------------------------------------------------
    def emit(self, type_: str, n: int, payload: dict[str, Any]) -> None:
        append_audit_event(self.store, self.audit_id, type_, n, payload)

    # -- the initial state -------------------------------------------------------------------------
    def initial(self) -> AgentState:
        trace = self.ctx.trace
        participants = sorted({s.actor for s in trace.steps})
        user = task_message(
            trace.header.trace_id,
            trace.header.model_dump(mode="json"),
            len(trace.steps),
            participants,
            self.ctx.mode.value,
        )
        if self.seed:
            user += "\nThe rules engine filed these findings (data); confirm, extend or withdraw each with a reason:\n"
            user += data_block("rules-findings", self.seed)
        return {
            "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}],
            "seen": [],
            "tool_calls": 0,
            "tokens": 0,
            "elapsed": 0.0,
            "rounds": 0,
            "nudges": 0,
            "submission": None,
            "notes": [],
            "done": False,
        }

    # -- nodes ---------------------------------------------------------------------------------------
    def agent_node(self, state: AgentState) -> AgentState:
        b = self.budget
        elapsed = self.clock(state)
        exhausted = (
            "tool calls"
            if state["tool_calls"] >= b.max_tool_calls
            else "tokens"
            if state["tokens"] >= b.max_tokens
            else "wall time"
            if elapsed >= b.max_seconds
            else None
        )
        if exhausted:
            return {
                "done": True,
                "elapsed": elapsed,
                "notes": [*state["notes"], f"budget exhausted ({exhausted}); submitted what was validated"],
            }
        started = time.perf_counter()
        n = len(state["messages"])
        left = b.max_seconds - elapsed
        try:
            result = complete(
                self.model,
                state["messages"],
                tools=self.toolbox.specs(),
                max_tokens=b.max_output_tokens,
                budget_s=left,
                recorder=lambda rec: self.emit("ModelCalled", n, rec),
            )
        except ModelCallTimeout:
            spent = time.perf_counter() - started
            return {
                "done": True,
                "elapsed": self.clock(state),
                "notes": [*state["notes"], _cut_note(n, spent, left, b.max_seconds, "without a reply")],
            }
        message: dict[str, Any] = {"role": "assistant", "content": result.content}
        if result.tool_calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
                }
                for c in result.tool_calls
            ]
        spent = time.perf_counter() - started
        notes = list(state["notes"])
        if result.prompt_cut_tokens:
            notes.append(
                f"the prompt of the model call at message {n} was cut by {result.prompt_cut_tokens} tokens "
                f"to what {left:.1f} s could read (prefill measured at {result.prefill_tokens_per_s} tokens/s)"
            )
        update: AgentState = {
            "messages": [*state["messages"], message],
            "tokens": state["tokens"] + result.input_tokens + result.output_tokens,
            "elapsed": self.clock(state),
            "notes": notes,
        }
        if result.cut_short:  # a half-written reply is not acted on
            return {
                **update,
                "done": True,
                "notes": [*notes, _cut_note(n, spent, left, b.max_seconds, "mid-reply")],
            }
        return update

    def tools_node(self, state: AgentState) -> AgentState:
        self.toolbox.seen_steps = set(state["seen"])
        last = state["messages"][-1]
        messages = list(state["messages"])
        calls, rounds, submission, notes = state["tool_calls"], state["rounds"], None, list(state["notes"])
        for call in last.get("tool_calls") or []:
            name = call["function"]["name"]
            try:
                args = json.loads(call["function"]["arguments"] or "{}")
            except json.JSONDecodeError:
                args = {}
            n = len(messages)
            if name == "submit_report":
                lenient = rounds >= self.budget.max_rounds
                checked = check_submission(
                    args if isinstance(args, dict) else {},
                    self.toolbox,
                    investigated=calls > 0,
                    agent=f"agent:{self.model}",
                    strict=not lenient,
                )
                self.emit(
                    "SubmissionChecked",
                    n,
                    {
                        "round": rounds,
                        "errors": checked.errors,
                        "findings": len(checked.findings),
                        "units": checked.submitted_units,
                        "failed_units": checked.failed_units,
                    },
                )
                if checked.errors and (not lenient or _fatal(checked.errors)):
                    rounds += 1
                    result: Any = {"accepted": False, "errors": checked.errors}
                else:
                    if checked.dropped_units or checked.errors:
                        notes.append(
                            f"last revise round: {checked.dropped_units} unresolvable evidence unit(s) removed; "
                            f"{len(checked.errors)} problem(s) left out: {'; '.join(checked.errors)[:500]}"
                        )
                    submission = {
                        "findings": [f.model_dump(mode="json") for f in checked.findings],
                        "withdrawn": checked.withdrawn,
                        "summary": args.get("summary") if isinstance(args, dict) else None,
                    }
                    result = {"accepted": True}
            else:
                calls += 1
                result = self.toolbox.call(name, args if isinstance(args, dict) else {})
                self.emit(
                    "ToolCalled",
                    n,
                    {"tool": name, "arguments": args, "result_chars": len(json.dumps(result, default=str))},
                )
            text = json.dumps(result, ensure_ascii=False, default=str)
            if len(text) > MAX_TOOL_RESULT:
                text = text[:MAX_TOOL_RESULT] + "…[truncated]"
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call["id"],
                    "content": data_block(name, text) if name != "submit_report" else text,
                }
            )
        return {
            "messages": messages,
            "seen": sorted(self.toolbox.seen_steps),
            "tool_calls": calls,
            "rounds": rounds,
            "submission": submission,
            "notes": notes,
            "done": submission is not None,
            "elapsed": self.clock(state),
        }

    def nudge_node(self, state: AgentState) -> AgentState:
        if state["nudges"] >= 2:
            return {
                "done": True,
                "elapsed": self.clock(state),
                "notes": [*state["notes"], "the model stopped calling tools without submitting a report"],
            }
        nudge = {
            "role": "user",
            "content": "Use a tool to investigate, or call submit_report with your findings.",
        }
        return {"messages": [*state["messages"], nudge], "nudges": state["nudges"] + 1}

    # -- routing ----------------------------------------------------------------------------------
    @staticmethod
    def after_agent(state: AgentState) -> str:
        if state.get("done"):
            return "end"
        return "tools" if state["messages"][-1].get("tool_calls") else "nudge"

    @staticmethod
    def after_tools(state: AgentState) -> str:
        return "end" if state.get("done") else "agent"

    @staticmethod
    def after_nudge(state: AgentState) -> str:
        return "end" if state.get("done") else "agent"

    def compile(self, checkpointer: Any = None) -> Any:
        from langgraph.graph import END, START, StateGraph

        g = StateGraph(AgentState)
        g.add_node("agent", self.agent_node)
        g.add_node("tools", self.tools_node)
        g.add_node("nudge", self.nudge_node)
        g.add_edge(START, "agent")
        g.add_conditional_edges("agent", self.after_agent, {"tools": "tools", "nudge": "nudge", "end": END})
        g.add_conditional_edges("tools", self.after_tools, {"agent": "agent", "end": END})
        g.add_conditional_edges("nudge", self.after_nudge, {"agent": "agent", "end": END})
        return g.compile(checkpointer=checkpointer)


def _cut_note(n: int, spent: float, left: float, budget: float, how: str) -> str:
    """What the report says when the wall-time budget stopped a model call."""
    return (
        f"budget exhausted (wall time): {left:.1f} s of the {budget:g} s budget were left and the model "
        f"call at message {n} was stopped after {spent:.1f} s {how}; submitted what was validated"
    )


def _fatal(errors: list[str]) -> bool:
    """Errors the lenient round cannot repair by dropping units (a clean verdict before investigating)."""
    return any("before any investigation" in e for e in errors)

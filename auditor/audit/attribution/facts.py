"""What attribution reads off a trace: participants, acts, executions, the coordinator's ledger and
the final answer — facts from structure (who spoke, what ran, what exit status came back, which
structured status a coordinator recorded), never from a keyword alone.

Framework-neutral: a *coordinator* is a participant that addresses other agents by name (explicit
recipients); a *tool result* is a tool actor's step or a ``tool_result`` step; an *execution
status* is the exit code a tool result reports; a *code act* is an agent step that carries a fenced
code block; an *executor* is a participant that answers as a tool somewhere in the run (its other
messages are automatic replies, never an agent's acts); a step's *new values* are the figures and
the names in running text it states that no earlier step held.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property

from auditor.core.json_text import json_value
from schemas.trace import ActorKind, StepKind, Trace, TraceStep

_EXIT = re.compile(r"\A\s*exit ?code:?\s*(-?\d+)", re.I)
_FENCE = re.compile(r"```[\w+-]*\n")
_FINAL = re.compile(r"FINAL ANSWER:\s*(.+)")
_LEDGER_FLAG = re.compile(r'"(is_request_satisfied|is_progress_being_made|is_in_loop)"\s*:\s*\{', re.S)
_WORD = re.compile(r"[a-z0-9]+(?:[.,][0-9]+)*")
# What makes a report an observation rather than a claim: a located source it shows (a URL or a
# file address: a page, a file) or an execution status it reports. A scheme is short: unbounded, it
# was scanned from every word of a long dotted run to the run's end (80,000 characters: 18 seconds).
_OBSERVED = re.compile(r"\b[a-z][a-z0-9+.-]{0,31}://\S|\bexit ?code:?\s*-?\d", re.I)
# A name stated in running text: a capitalised word right after a lower-case word (a heading's or a
# sentence's first word is not one).
_NAME_IN_TEXT = re.compile(r"\b[a-z][a-z']*[,;]? [\"'(\u201c]?([A-Z][a-z]{2,})\b")
_PARTICIPANT_WORD = re.compile(r"[a-z]+")


def agent_name(actor: str) -> str:
    """The participant's name: the part before `` (`` (``Orchestrator (thought)`` → Orchestrator)."""
    return actor.split(" (", 1)[0].strip()


def normalise(text: str) -> str:
    """Lower-case words and numbers joined by single spaces: for containment of answer values."""
    return " ".join(_WORD.findall(text.lower()))


@dataclass(frozen=True)
class Execution:
    """A tool result that reports an exit status, and the code act it answers (if one precedes it)."""

    result: TraceStep
    exit_code: int
    code_step: TraceStep | None

    @property
    def failed(self) -> bool:
        return self.exit_code != 0


@dataclass
class TraceFacts:
    """Derived, read-only facts about one trace (computed lazily)."""

    trace: Trace
    notes: list[str] = field(default_factory=list)

    @property
    def steps(self) -> list[TraceStep]:
        return self.trace.steps

    def is_tool(self, step: TraceStep) -> bool:
        return step.actor_kind is ActorKind.tool or step.kind is StepKind.tool_result

    def is_agent(self, step: TraceStep) -> bool:
        return (
            step.actor_kind is ActorKind.agent
            and not self.is_tool(step)
            and agent_name(step.actor) not in self.executors
        )

    @cached_property
    def executors(self) -> frozenset[str]:
        """Participants that answer as a tool somewhere in the run (a group chat's code executor):
        their other messages are the executor's automatic replies ("no code to execute"), not acts
        of an agent that could be responsible."""
        return frozenset(agent_name(s.actor) for s in self.steps if s.actor_kind is ActorKind.tool)

    @cached_property
    def agents(self) -> list[str]:
        """Agents in order of first appearance (tools and humans excluded)."""
        seen: dict[str, None] = {}
        for s in self.steps:
            if self.is_agent(s):
                seen.setdefault(agent_name(s.actor))
        return list(seen)

    @cached_property
    def coordinator(self) -> str | None:
        """The agent that addresses other agents by name most often, if any does."""
        counts = Counter(
            agent_name(s.actor)
            for s in self.steps
            if self.is_agent(s) and any(r != s.actor and r in self.agents for r in s.recipients or [])
        )
        if not counts:
            return None
        return counts.most_common(1)[0][0]

    @cached_property
    def form(self) -> str:
        """How the run is organised: ``coordinated`` (an agent directs the others by name),
        ``group chat`` (several agents, none directing) or ``single agent``."""
        if self.coordinator:
            return "coordinated"
        return "group chat" if len(self.agents) > 1 else "single agent"

    def is_claim(self, step: TraceStep) -> bool:
        """A worker's own assertion: an agent step, not the coordinator's, that shows no located
        source and reports no execution — what it states rests on its word alone (a page or a
        program output it shows is an observation: whoever concludes from it owns the conclusion)."""
        return (
            self.is_agent(step)
            and agent_name(step.actor) != self.coordinator
            and _OBSERVED.search(step.content) is None
        )

    def new_values(self, step: TraceStep, earlier: set[str]) -> set[str]:
        """The values ``step`` states that no earlier step held (``earlier``: the normalised words of
        the steps before it): figures (numbers of two or more characters) and names in running text,
        the participants' own names aside."""
        figures = {w for w in self.texts[step.index].split() if len(w) > 1 and any(c.isdigit() for c in w)}
        names = {m.group(1).lower() for m in _NAME_IN_TEXT.finditer(step.content)}
        return (figures | names) - earlier - self.participant_words

    @cached_property
    def participant_words(self) -> frozenset[str]:
        """The words of the participants' names (``Data_Expert`` -> data, expert)."""
        return frozenset(
            w for s in self.steps for w in _PARTICIPANT_WORD.findall(agent_name(s.actor).lower())
        )

    def has_code(self, step: TraceStep) -> bool:
        return self.is_agent(step) and bool(_FENCE.search(step.content))

    @cached_property
    def executions(self) -> list[Execution]:
        """Tool results that report an exit status in their text (a chat's code executor), each
        with the nearest earlier code act. A shell harness that records every command's exit code
        (``raw.exit_code``; its text may open with it only when it failed) is read by the test-run
        facts instead: its failed commands alone would read as the run's last execution."""
        found: list[Execution] = []
        for i, s in enumerate(self.steps):
            tool = self.is_tool(s) or s.actor_kind is ActorKind.tool
            m = _EXIT.match(s.content) if tool and type(s.raw.get("exit_code")) is not int else None
            if m is None:
                continue
            code = next((p for p in reversed(self.steps[:i]) if self.has_code(p)), None)
            found.append(Execution(s, int(m.group(1)), code))
        return found

    @cached_property
    def opening(self) -> TraceStep:
        """The step that states the task (the first step)."""
        return self.steps[0]

    @cached_property
    def first_act(self) -> TraceStep | None:
        """The first substantive act: the opening itself when the next step executes code it carried
        (the opener acted, not only relayed the task), else the first agent step after the opening."""
        if len(self.steps) > 1 and self.is_tool(self.steps[1]) and self.has_code(self.opening):
            return self.opening
        return next((s for s in self.steps[1:] if self.is_agent(s)), None)

    def ledger(self, step: TraceStep) -> dict[str, bool]:
        """The coordinator's structured status flags in a step (``is_request_satisfied`` …), if any."""
        if not _LEDGER_FLAG.search(step.content):
            return {}
        start = step.content.find("{")
        obj = json_value(step.content[start:])
        if not isinstance(obj, dict):
            return {}
        flags: dict[str, bool] = {}
        for key, value in obj.items():
            if isinstance(value, dict) and isinstance(value.get("answer"), bool):
                flags[key] = value["answer"]
        return flags

    @cached_property
    def ledgers(self) -> list[tuple[TraceStep, dict[str, bool]]]:
        """Every coordinator step that records structured status flags, in order."""
        out = []
        for s in self.steps:
            if self.coordinator and agent_name(s.actor) == self.coordinator:
                flags = self.ledger(s)
                if flags:
                    out.append((s, flags))
        return out

    @cached_property
    def final_step(self) -> TraceStep | None:
        """The step that delivers the run's answer: a final-output step, else the last agent step
        with substance (not a bare termination word)."""
        for s in reversed(self.steps):
            if s.kind is StepKind.final_output or _FINAL.search(s.content):
                return s
        for s in reversed(self.steps):
            if self.is_agent(s) and len(normalise(s.content).split()) > 3:
                return s
        return None

    @cached_property
    def final_answer(self) -> str | None:
        """The answer value the run delivered, where the final step states one explicitly."""
        s = self.final_step
        if s is None:
            return None
        m = _FINAL.search(s.content)
        if m:
            return m.group(1).strip().splitlines()[0].strip() or None
        return None

    def first_mention(self, value: str, *, before: int | None = None) -> TraceStep | None:
        """The first step whose content contains ``value`` (normalised), before index ``before``."""
        needle = normalise(value)
        if len(needle) < 2:
            return None
        return next(iter(self.mentions(needle, end=before)), None)

    def mentions(self, needle: str, start: int = 0, end: int | None = None) -> list[TraceStep]:
        """Steps in ``[start, end)`` whose normalised content holds the normalised ``needle`` as whole
        words (``201`` is not in ``2019``, ``but`` is not in ``button``)."""
        stop = len(self.steps) if end is None else end
        padded = f" {needle} "
        return [self.steps[i] for i in range(start, stop) if padded in self.texts[i]]

    def states(self, step: TraceStep, value: str) -> bool:
        """Whether ``step`` holds ``value`` (normalised) as whole words; any length, for a test of
        one step already chosen by structure (scanning a run needs a longer value, ``first_mention``)."""
        needle = normalise(value)
        return bool(needle) and f" {needle} " in self.texts[step.index]

    @cached_property
    def texts(self) -> list[str]:
        """Each step's normalised content, padded with a space each side (computed once)."""
        return [f" {normalise(s.content)} " for s in self.steps]

    def workers(self) -> list[str]:
        """Agents other than the coordinator, in order of first appearance."""
        return [a for a in self.agents if a != self.coordinator]

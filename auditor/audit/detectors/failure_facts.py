"""Facts the failure-mode detectors share: what failed, who acted, when the run said it was done.

Decided from structure, never from wording alone:

- an *observation* is what came back to the agents: a tool or environment result, a framework's
  own record of running the program it built (ChatDev's ``[Test Reports]`` record), or an agent's
  relay of an execution (a step right after another participant's fenced code that carries no
  code of its own and is shaped like program output: an exit status, a traceback, or only lines
  of fewer than four words — the AG2 executor's turn);
- an observation *failed* when the source marks it so (``raw["status"] == "error"``), when it
  reports a non-zero exit code at its start, carries a Python traceback (its header, or
  ``Traceback:`` followed by a ``File "`` frame), states ``success: false`` as a field, or is a
  tool result whose text opens with ``Error:`` (the tool's own error prefix). A number that looks
  like a status code in business text never counts;
- an *act* is an agent's step that is not an observation; its *signature* is what makes two acts
  the same act: the tool and its exact arguments, else its fenced code (whitespace collapsed),
  else its text lower-cased with whitespace collapsed and progress counters ("step 13/20") and
  clock times masked (at least four words, so that bare protocol words are never acts). Other
  numbers stay: a message about ticket OPS-31 or 2026-11-04 is not the same act as one about
  OPS-1 or 2026-11-02;
- the run *declares itself done* with a protocol marker: a ``TERMINATE`` line, a
  ``FINAL ANSWER:`` line, a ``\\boxed{}`` answer, a final-output step, or a call to a finishing
  tool (``terminate``, ``complete_task``, ``final_answer``, ``finish``, ``submit``);
- a *recorded limit* is the framework saying a round, turn, time or step budget was reached
  ("Max rounds (30) reached.", "Executing step 20/20" with no finish after it);
- an agent's step is *addressed* to its explicit recipients, else, in a run where exactly two
  agents speak (a two-party chat such as AG2's assistant and proxy), to the other agent;
- an agent *reports it cannot go on* when its prose states that the work cannot proceed, be
  solved or be completed, or that it needs information it lacks ("this problem cannot be solved
  with the information provided", "I need more information"); a conditional sentence ("if I
  cannot find it, …") is none. The phrase nominates; what the detectors decide is what the other
  agents did next.

A human participant (a user, a customer, a simulated user) is a source of claims: its steps are
never acts and it is never the responsible participant of a finding.
"""

from __future__ import annotations

import hashlib
import re
from array import array
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

from auditor.audit.attribution.facts import TraceFacts, agent_name
from auditor.audit.detectors.base import AuditContext, FindingDraft, criterion
from auditor.audit.detectors.facts import criteria, hop
from auditor.audit.detectors.test_runs import answered_call, shows_files, worked_beside
from schemas import ActorKind, EvidenceUnit, PropagationHop, RiskClass, StepKind, TraceStep
from schemas.trace import REFUSED

_EXIT = re.compile(r"\A\s*exit ?code:?\s*(-?\d+)[^\n]*", re.I)
_TRACEBACK = re.compile(r"Traceback \(most recent call last\):|Traceback:[ \t]*\n\s*File \"")
_ERROR_LINE = re.compile(r"(?m)^[ \t]*(?:[A-Za-z_][\w.]*(?:Error|Exception)|Exception)\b:?[^\n]*")
_ERROR_PREFIX = re.compile(r"\A\s*(?:Error|ERROR):[^\n]*")
_SUCCESS_FALSE = re.compile(r"""["']success["']\s*:\s*(?:False|false)\b""")
_FENCE = re.compile(r"```[\w+-]*[ \t]*\n(.*?)(?:```|\Z)", re.S)
_WORDS = re.compile(r"\w+")
# a progress counter ("Executing step 13/20") or a clock time: says nothing about what an act is
COUNTER = re.compile(r"\b\d+\s*/\s*\d+\b|\b\d{1,2}:\d{2}(?::\d{2})?(?:\.\d+)?\b")
_SPACE = re.compile(r"\s+")
_TERMINATE = re.compile(r"(?m)^[ \t*]*TERMINATE\W*$")
_FINAL = re.compile(r"FINAL ANSWER:[^\n]*")
_BOXED = re.compile(r"\\boxed\{[^}\s][^\n]*")
_LIMIT = re.compile(
    r"(?im)^[^\n]{0,40}?\bmax(?:imum)?\.? ?(?:number of )?(?:rounds?|turns?|time|steps?|iterations?|messages?)\b"
    r"[^\n]{0,40}?\b(?:reached|exceeded|hit)\b[^\n]*"
)
# a harness's exit status naming a budget that ran out: mini-SWE-agent's LimitsExceeded and
# TimeExceeded, SWE-agent's exit_cost and exit_context, a context window exceeded
_LIMIT_STATUS = re.compile(r"(?i)limit|exceed|cost|context")
_LIMIT_REACHED = re.compile(
    r"(?i)\b(?:reached|exceeded|hit)\b[^\n]{0,20}?\bmax(?:imum)?\b[^\n]{0,20}?\b(?:rounds?|turns?|steps?|iterations?|budget|cost)\b"
)  # a harness's end record in the other order: "reached maximum iteration"
_STEP_OF = re.compile(r"(?i)\bExecuting step (\d+)/(\d+)")
_CANNOT = re.compile(
    r"(?i)\b(?:cannot|can't|can not|unable to|not able to|impossible to)\s+(?:\w+\s+){0,2}?"
    r"(?:proceed|continue|solve|be solved|answer|be answered|complete|be completed|determine|be determined"
    r"|calculate|be calculated)\b"
    r"|\b(?:unsolvable|unanswerable|insufficient (?:data|information)|not enough (?:data|information)"
    r"|(?:need|needs|require|requires) (?:more|additional|the missing) (?:data|information|details|context))\b"
)
# from a word's start ((?<!\w), past digits and non-ASCII letters to its first [A-Za-z_]): tried at
# every letter of a long word, \w* read the rest of the word each time (quadratic)
_CALLED = re.compile(r"(?<!\w)[^\W_A-Za-z]*([A-Za-z_]\w*)\s*\(")
_CODE_OPENING = re.compile(r"(?:def|class|import|from|async def)\b")
_IF = re.compile(r"(?i)\b(?:if|unless|whether|in case|once)\b")
FINISHING_TOOLS = frozenset({"terminate", "complete_task", "final_answer", "finish", "submit"})
# a framework's own record of running the program it built, kept as a system step by its importer
EXECUTION_RECORDS = frozenset({"Test Reports"})
ERROR_STATUSES = frozenset({"error", "failed", "failure", "timeout"})
MIN_ACT_WORDS = 4


def refused(step: TraceStep) -> bool:
    """Whether a result is a refusal (``schemas.trace.REFUSED``): no observation of anything."""
    return step.raw.get("error_type") == REFUSED


@dataclass(frozen=True)
class Declared:
    """A protocol marker by which a participant declared the run done."""

    pos: int
    surface: str


class Positions:
    """A set of step positions as one byte a step (a million-step trace: 1 MB, where a frozenset
    of ints costs some 70 MB): membership only, which is all the detectors ask of it."""

    __slots__ = ("_flags",)

    def __init__(self, size: int, members: Iterable[int]) -> None:
        self._flags = bytearray(size)
        for pos in members:
            self._flags[pos] = 1

    def __contains__(self, pos: object) -> bool:
        return isinstance(pos, int) and 0 <= pos < len(self._flags) and self._flags[pos] == 1


def compact_signature(signature: str) -> str:
    """A signature as its kind and a 128-bit digest of the whole: equal signatures stay equal (a
    collision is out of reach) and an act's cached signature no longer copies its text."""
    kind, _, body = signature.partition(":")
    return f"{kind}:{hashlib.blake2b(body.encode(), digest_size=16).hexdigest()}"


def collapse(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def code_of(text: str) -> str:
    """The fenced code of a step (every block, whitespace collapsed), or ''."""
    return " ".join(collapse(m.group(1)) for m in _FENCE.finditer(text)).strip()


def code_blocks(text: str) -> list[str]:
    """A step's code as written: each fenced block, else the whole text when it reads as code (its
    first non-empty line opens a definition or an import)."""
    blocks = [m.group(1) for m in _FENCE.finditer(text)]
    if blocks:
        return blocks
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return [text] if _CODE_OPENING.match(first) else []


def cannot_go_on(text: str) -> str | None:
    """The words by which an agent's prose states it cannot go on (module doc), or None."""
    for m in _CANNOT.finditer(text):
        start = 1 + max(text.rfind(c, 0, m.start()) for c in ".!?\n")
        if not _IF.search(text[start : m.start()]):
            return m.group()
    return None


def one_turn_task(steps: list[TraceStep]) -> tuple[int, int] | None:
    """(the principal's only message, the agent's closing message) of a run posed as one principal
    turn — the user's message, then the agent alone with its tools until its final answer — or
    None. No one answers that closing message, so what it leaves undone or wrong stays so."""
    turns = [p for p, s in enumerate(steps) if s.actor_kind is ActorKind.human and s.kind is StepKind.message]
    last = len(steps) - 1
    if len(turns) != 1 or last <= turns[0]:
        return None
    end = steps[last]
    if end.actor_kind is not ActorKind.agent or end.kind is not StepKind.message or not end.content.strip():
        return None
    return turns[0], last


_REASONING_OPEN = re.compile(r"(?i)<(thinking|think|reasoning)>")
_REASONING_CLOSE = {name: re.compile(rf"(?i)</{name}>") for name in ("thinking", "think", "reasoning")}


def visible(text: str) -> str:
    """What the user reads of a message: the text outside reasoning markup. Each opening tag's
    close is looked for once, and a name found unclosed is not looked for again: linear in the
    text, where a lazy pattern with a back-reference is quadratic in unclosed tags."""
    kept, at, start = [], 0, 0
    unclosed: set[str] = set()
    while (opening := _REASONING_OPEN.search(text, start)) is not None:
        name = opening.group(1).lower()
        close = None if name in unclosed else _REASONING_CLOSE[name].search(text, opening.end())
        if close is None:
            unclosed.add(name)
            start = opening.end()
            continue
        kept.append(text[at : opening.start()])
        at = start = close.end()
    kept.append(text[at:])
    return " ".join(kept)


def quotable(step: TraceStep, needle: str | None = None, limit: int = 200) -> str | None:
    """A verbatim quote of a step: the line holding ``needle`` (trimmed around it), else the first
    non-empty line the reader sees (reasoning markup set aside: not "<thinking>"), else the first
    non-empty line; None when the step has no text."""
    content = step.content
    if needle and needle.strip() and needle.strip() in content:
        needle = needle.strip()
        at = content.find(needle)
        start = content.rfind("\n", 0, at) + 1
        end = content.find("\n", at + len(needle))
        line = content[start : end if end >= 0 else len(content)].strip()
        if len(line) <= limit:
            return line
        i = line.find(needle)
        lo = max(0, i - max(0, (limit - len(needle)) // 2))
        return line[lo : lo + max(limit, len(needle))].strip() or needle
    shown = visible(content) if _REASONING_OPEN.search(content) else content
    for text in (shown, content):
        for line in text.splitlines():
            if line.strip() and line.strip() in content:
                return line.strip()[:limit].strip()
    return None


class RunFacts:
    """Per-trace facts for the failure-mode detectors, computed once per audit (see ``of``)."""

    def __init__(self, ctx: AuditContext) -> None:
        self.ctx = ctx
        self.steps = ctx.trace.steps
        self.tf = TraceFacts(ctx.trace)
        self._signatures: list[str | bool | None] = [False] * len(self.steps)  # False: not computed
        self._interned: dict[str, str] = {}

    @staticmethod
    def of(ctx: AuditContext) -> RunFacts:
        """The context's facts, built on first use and kept on the context for the other detectors."""
        cached = ctx.__dict__.get("_run_facts")
        if not isinstance(cached, RunFacts):
            cached = RunFacts(ctx)
            ctx.__dict__["_run_facts"] = cached
        return cached

    # -- who and what ----------------------------------------------------------------------------
    def is_agent(self, pos: int) -> bool:
        step = self.steps[pos]
        return step.actor_kind is ActorKind.agent and step.kind is not StepKind.tool_result

    def is_result(self, pos: int) -> bool:
        step = self.steps[pos]
        return (
            step.kind is StepKind.tool_result
            or step.actor_kind in (ActorKind.tool, ActorKind.environment)
            or (step.actor_kind is ActorKind.system and step.raw.get("record") in EXECUTION_RECORDS)
        )

    @cached_property
    def pair(self) -> tuple[str, str] | None:
        """The two agents of a run in which exactly two agents speak (a two-party chat), else None."""
        agents = sorted({s.actor for p, s in enumerate(self.steps) if self.is_agent(p)})
        return (agents[0], agents[1]) if len(agents) == 2 else None

    def addressees(self, pos: int) -> list[str]:
        """Whom an agent's step addresses: its explicit recipients, else the other agent of a
        two-party chat (module doc)."""
        step = self.steps[pos]
        named = [r for r in step.recipients or [] if r != step.actor]
        if named:
            return named
        if self.pair is not None and step.actor in self.pair:
            return [a for a in self.pair if a != step.actor]
        return []

    @cached_property
    def beside(self) -> frozenset[int]:
        return worked_beside(self.steps)

    @cached_property
    def observations(self) -> frozenset[int]:
        """Results (save refusals: nothing ran, and the ends of processes the agent worked beside:
        ``worked_beside``), and agent relays of an execution (right after another participant's
        code)."""
        out = set()
        beside = self.beside
        for pos, step in enumerate(self.steps):
            if (self.is_result(pos) and not refused(step) and pos not in beside) or (
                pos > 0
                and self.is_agent(pos)
                and self.steps[pos - 1].actor != step.actor
                and self.steps[pos - 1].actor_kind is ActorKind.agent
                and code_of(self.steps[pos - 1].content)
                and "```" not in step.content
                and self._output_like(step.content)
            ):
                out.add(pos)
        return frozenset(out)

    @staticmethod
    def _output_like(text: str) -> bool:
        """Text shaped like program output: an exit status or traceback, or only short lines."""
        if _EXIT.match(text) or _TRACEBACK.search(text):
            return True
        return all(len(_WORDS.findall(line)) < MIN_ACT_WORDS for line in text.splitlines())

    @cached_property
    def observed(self) -> list[int]:
        """The observations' positions, in order."""
        return sorted(self.observations)

    def observed_between(self, start: int, end: int) -> bool:
        """Whether an observation lies strictly between two positions."""
        i = bisect_left(self.observed, start + 1)
        return i < len(self.observed) and self.observed[i] < end

    def echo(self, pos: int) -> bool:
        """The same text by the same actor as the step just before: one act logged twice."""
        if pos == 0:
            return False
        prev, step = self.steps[pos - 1], self.steps[pos]
        return prev.actor == step.actor and prev.kind == step.kind and prev.content == step.content

    @cached_property
    def acts(self) -> array[int]:
        """Positions of agents' own acts (not observations, not echoes, never a human's step)."""
        return array(
            "q",
            (
                p
                for p in range(len(self.steps))
                if self.is_agent(p) and p not in self.observations and not self.echo(p)
            ),
        )

    @cached_property
    def act_set(self) -> Positions:
        return Positions(len(self.steps), self.acts)

    @cached_property
    def code_acts(self) -> list[int]:
        """Acts that carry code (``code_blocks``), in order."""
        return [p for p in self.acts if code_blocks(self.steps[p].content)]

    @cached_property
    def acts_by_actor(self) -> dict[str, array[int]]:
        """Each actor's act positions, in order (for the latest act of an agent within a span)."""
        out: dict[str, array[int]] = {}
        for p in self.acts:
            out.setdefault(self.steps[p].actor, array("q")).append(p)
        return out

    def last_act_between(self, actor: str, start: int, end: int) -> int | None:
        """The actor's last act strictly between two positions, or None."""
        acts = self.acts_by_actor.get(actor, array("q"))
        i = bisect_left(acts, end) - 1
        return acts[i] if i >= 0 and acts[i] > start else None

    def failure(self, pos: int) -> str | None:
        """The verbatim text that marks an observation as failed, or None (see the module doc)."""
        if pos not in self.observations:
            return None
        step = self.steps[pos]
        content = step.content
        if str(step.raw.get("status", "")).lower() in ERROR_STATUSES:
            message = str(step.raw.get("status_message") or "")
            return message if message and message in content else (quotable(step) or "")
        if m := _EXIT.match(content):
            return m.group().strip() if int(m.group(1)) != 0 else None
        if shows_files(step, answered_call(self.steps, pos)):
            return None
        if m := _TRACEBACK.search(content):
            lines = list(_ERROR_LINE.finditer(content, m.end()))
            return (lines[-1] if lines else m).group().strip()
        if m := _SUCCESS_FALSE.search(content):
            return m.group()
        if self.is_result(pos) and (m := _ERROR_PREFIX.match(content)):
            return m.group().strip()
        return None

    @cached_property
    def failures(self) -> dict[int, str]:
        return {p: s for p in sorted(self.observations) if (s := self.failure(p)) is not None}

    def succeeded(self, pos: int) -> bool:
        """An observation that did not fail and carries text."""
        return pos in self.observations and pos not in self.failures and bool(self.steps[pos].content.strip())

    def signature(self, pos: int) -> str | None:
        """What makes two acts the same act (module doc), or None for an act too bare to compare
        and for a message that announces the same agent's next step, a tool call (the call is the act).
        Computed once per step, kept compact and shared between equal acts: several detectors
        compare the same acts, and only for equality and kind."""
        cached = self._signatures[pos]
        if cached is False:
            full = self._signature(pos)
            if full is not None:
                short = compact_signature(full)
                full = self._interned.setdefault(short, short)
            self._signatures[pos] = cached = full
        return cached  # type: ignore[return-value]

    def _signature(self, pos: int) -> str | None:
        step = self.steps[pos]
        nxt = pos + 1
        if step.kind is not StepKind.tool_call and nxt < len(self.steps):
            after = self.steps[nxt]
            if after.actor == step.actor and after.kind is StepKind.tool_call:
                return None
        if step.tool is not None and step.kind is StepKind.tool_call:
            args = step.tool.arguments
            text = collapse(args) if isinstance(args, str) else repr(sorted((args or {}).items()))
            return f"call:{step.tool.name}:{text}"
        code = code_of(step.content)
        if code:
            return f"code:{code}"
        text = COUNTER.sub("#", collapse(step.content).lower())
        if len(_WORDS.findall(text)) < MIN_ACT_WORDS:
            return None
        return f"text:{text}"

    @cached_property
    def _replies(self) -> dict[str, int]:
        """Each act's id -> the first observation that names it as the act it answers."""
        out: dict[str, int] = {}
        for p in self.observed:
            refs = self.steps[p].refs
            if refs is not None and refs.reply_to is not None:
                out.setdefault(refs.reply_to, p)
        return out

    def answer_of(self, pos: int) -> int | None:
        """The observation that answered an act: the one that names it (``reply_to``: the calls of
        one turn are answered after all of them), else the first after it, before its actor acts
        again."""
        named = self._replies.get(self.steps[pos].step_id)
        if named is not None and named > pos:
            return named
        actor = self.steps[pos].actor
        for p in range(pos + 1, len(self.steps)):
            if p in self.observations:
                return p
            if self.steps[p].actor == actor and p in self.act_set:
                return None
        return None

    def same_check(self, a: int, b: int) -> bool:
        """Two acts of one agent that exercise the same check: the same tool, or code both times."""
        x, y = self.steps[a], self.steps[b]
        if x.actor != y.actor:
            return False
        if x.tool is not None and y.tool is not None:
            return x.tool.name == y.tool.name
        return bool(code_of(x.content)) and bool(code_of(y.content))

    def tool_of(self, pos: int) -> str | None:
        """The tool an act calls or a result answers (the last dotted segment), if named."""
        step = self.steps[pos]
        return step.tool.name.rsplit(".", 1)[-1] if step.tool is not None else None

    # -- when the run ends --------------------------------------------------------------------------
    def finishes(self, pos: int) -> bool:
        """Whether an act calls a finishing tool, as a tool call or in its code (``final_answer("…")``)."""
        if (self.tool_of(pos) or "").lower() in FINISHING_TOOLS:
            return True
        return any(
            m.group(1).lower() in FINISHING_TOOLS for m in _CALLED.finditer(code_of(self.steps[pos].content))
        )

    def declared_done(self, pos: int) -> str | None:
        """The protocol marker by which a participant declared the run done at ``pos``, or None."""
        step = self.steps[pos]
        if step.actor_kind is ActorKind.human:
            return None
        if step.kind is StepKind.tool_call and (self.tool_of(pos) or "").lower() in FINISHING_TOOLS:
            return quotable(step) or None
        if step.kind is StepKind.final_output:
            return quotable(
                step, _FINAL.search(step.content).group() if _FINAL.search(step.content) else None
            )
        if pos in self.observations or pos == 0:
            return None  # the opening states the task (and how to answer it), it declares nothing
        for pattern in (_TERMINATE, _FINAL, _BOXED):
            if m := pattern.search(step.content):
                return m.group().strip()
        return None

    @cached_property
    def declarations(self) -> list[Declared]:
        return [Declared(p, s) for p in range(len(self.steps)) if (s := self.declared_done(p))]

    @cached_property
    def limit(self) -> tuple[int, str] | None:
        """The framework's record that a round, turn, time or step budget ran out, if any. A tool's
        output is no record of the framework's: a source file that prints "maximum number of
        iterations reached" is the program's message, shown to the agent."""
        for pos, step in enumerate(self.steps):
            if step.actor_kind is ActorKind.human or step.kind in (StepKind.tool_call, StepKind.tool_result):
                continue
            if m := _LIMIT.search(step.content):
                return pos, m.group().strip()
            if (
                step.actor_kind is ActorKind.system
                and step.raw.get("record") == "exit"
                and step.content.strip()
                and (
                    _LIMIT_STATUS.search(str(step.raw.get("exit_status") or ""))
                    or _LIMIT_REACHED.search(step.content)
                )
            ):  # a harness's end record ("LimitsExceeded", "Agent reached maximum iteration …")
                return pos, step.content.strip()
        last = None
        for pos, step in enumerate(self.steps):
            if step.actor_kind is ActorKind.system and (m := _STEP_OF.search(step.content)):
                last = (pos, m)
        if last is not None and last[1].group(1) == last[1].group(2):
            pos, m = last
            if not any(d.pos > pos for d in self.declarations):
                return pos, m.group()
        return None

    @cached_property
    def final_pos(self) -> int | None:
        step = self.tf.final_step
        return None if step is None else self.ctx.position(step.step_id)

    @cached_property
    def last_act(self) -> int | None:
        return self.acts[-1] if self.acts else None

    @cached_property
    def task(self) -> str:
        """The task text: the header's, else the opening step's."""
        return self.ctx.trace.header.task or (self.steps[0].content if self.steps else "")

    def responsible(self, pos: int) -> str | None:
        """The participant answerable for an act (never a human)."""
        step = self.steps[pos]
        return None if step.actor_kind is ActorKind.human else step.actor

    @cached_property
    def coordinator(self) -> str | None:
        """The agent that addresses others by name most (TraceFacts), as the trace spells it."""
        name = self.tf.coordinator
        if name is None:
            return None
        return next(
            (s.actor for s in self.steps if agent_name(s.actor) == name and s.actor_kind is ActorKind.agent),
            name,
        )

    # -- citing --------------------------------------------------------------------------------------
    def unit(self, pos: int, needle: str | None = None) -> EvidenceUnit | None:
        """A resolving evidence unit for a step (the line holding ``needle``), or None if it has no text."""
        step = self.steps[pos]
        text = quotable(step, needle)
        return self.ctx.unit(step.step_id, text) if text else None

    def hop(self, pos: int, note: str) -> PropagationHop:
        return hop(self.ctx, pos, note)


@dataclass(frozen=True)
class Effect:
    """What the failure did to the run: established at the end (R3 holds), stopped by a named later
    step (R3 fails, intercepted), or not established (R3 unassessed: a lead)."""

    verdict: str
    rationale: str
    material: str | None = None
    intercepted_at: str | None = None


def realized(rationale: str, material: str) -> Effect:
    return Effect("holds", rationale, material)


def intercepted(step_id: str, rationale: str) -> Effect:
    return Effect("fails", rationale, intercepted_at=step_id)


def unestablished(rationale: str) -> Effect:
    return Effect("unassessed", rationale)


def failure_draft(
    facts: RunFacts,
    *,
    mode: str,
    pos: int,
    title: str,
    mechanism: str,
    violated: str,
    evidence: list[EvidenceUnit | None],
    effect: Effect,
    path: list[PropagationHop] | None = None,
    responsible: str | None = None,
    confidence: float = 0.7,
) -> FindingDraft:
    """A task-failure finding at the act ``pos``: R1 the violated property, R2 the responsible
    participant's own act (a failure mode is never transport), R3 from ``effect``, R4 the quotes."""
    step = facts.steps[pos]
    who = responsible if responsible is not None else facts.responsible(pos)
    units = [u for u in evidence if u is not None]
    return FindingDraft(
        risk_class=RiskClass.task_failure,
        title=title,
        boundary_edge=facts.ctx.graph.step_edges[pos][0],
        first_anomalous_step=step.step_id,
        responsible_participant=who,
        mechanism=mechanism,
        criteria=criteria(
            ("holds", violated),
            ("holds", f"the failure is {who or step.actor}'s own act, not something carried from upstream"),
            criterion(effect.verdict, effect.rationale),
            ("holds" if units else "unassessed", "the acts and observations are quoted verbatim"),
        ),
        evidence=units,
        propagation_path=path or [facts.hop(pos, mode)],
        material_effect=effect.material if effect.verdict == "holds" else None,
        intercepted_at=effect.intercepted_at,
        confidence=confidence,
        failure_mode=mode,
    )

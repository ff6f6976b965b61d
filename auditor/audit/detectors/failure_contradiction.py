"""A claim that contradicts a failure the trace shows: the agent's call failed (the tool's error
status, a refusal as an ``{"error": …}`` result, a failed command), and the agent later states
that same action on that same object as done.

Compared by structure, never by phrase lists: the *action* is a word of the failed call's tool
name (``refund`` of ``issue_refund``, ``cancel`` of ``cancel_reservation``) standing in the claim in
its completed form (``refunded``, ``cancelled``: the verb's past form), and the *object* is one of
the call's own argument values that identify something (an order number, a reservation id: a
value holding a digit) named in the same sentence. A sentence that negates or conditions itself
(``not``, ``never``, ``if``, ``once`` …, a question) is no claim. The failure stands when no later
call of the agent to the same tool on a named object succeeded before the claim: a retry with
corrected arguments that went through makes the claim true.

Filed at the claim, citing the failed result and the claim verbatim. A claim that reached a human
or was the run's final word is realized (someone was told the action happened); such a retry after
the claim is an interception; otherwise a lead. Where ``failure_mismatch`` already
speaks — the word is the tool's leading verb and none of the agent's calls with that verb succeeded
— this detector is silent: one claim, one finding.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from auditor.audit.detectors.base import AuditContext, FindingDraft
from auditor.audit.detectors.failure_facts import (
    Effect,
    RunFacts,
    failure_draft,
    intercepted,
    quotable,
    realized,
    unestablished,
)
from auditor.audit.detectors.failure_mismatch import MIN_VERB, past_form
from auditor.audit.detectors.policy_facts import result_failed
from auditor.audit.detectors.unverified_relay import prose
from schemas import ActorKind, RiskClass, StepKind

_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
_WORD = re.compile(r"[A-Za-z]+")
_TOKEN = re.compile(r"\w+")
_NAME_WORD = re.compile(r"[_\W]|(?<=[a-z])(?=[A-Z])")
# closed-class words that make a sentence other than a statement of fact (negation, condition)
_NOT_A_CLAIM = re.compile(r"(?i)\b(?:not|never|no|if|once|unless|until|whether|when)\b|n't\b|\?")
MIN_VALUE = 3  # an argument value this long names an object (an id, an amount), not a flag
FEW_VALUES = 32  # a call naming more objects than this is looked for sentence by sentence
MAX_QUOTE = 400  # a claim quoted longer than this is cut around what it says (word and object)


def values_of(arguments: Any) -> set[str]:
    """The call's argument values that identify its object in prose: strings and numbers of at
    least ``MIN_VALUE`` characters holding a digit (an order number, a reservation id, an amount,
    a date), at any depth; a word-like value (a cabin class, a city code) names a kind, not an
    object."""
    out: set[str] = set()
    stack = [arguments]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, str | int | float) and not isinstance(v, bool):
            text = str(v)
            if len(text) >= MIN_VALUE and any(c.isdigit() for c in text):
                out.add(text)
    return out


def _claim_quote(sentence: str, word: str, named: set[str]) -> str:
    """The claim as quoted: the sentence, or, past ``MAX_QUOTE`` characters (a message with no
    full stop), the verbatim stretch around its completed word and the object it names: a run's
    one long message made a report of 10 MB, the sentence quoted whole."""
    if len(sentence) <= MAX_QUOTE:
        return sentence
    value = min(named, key=lambda v: (sentence.find(v), v))  # the first object it names
    at = sentence.find(value)
    near = sentence.rfind(word, 0, at)  # the completed word, said before the object
    start = near if near >= 0 and at + len(value) - near <= MAX_QUOTE else max(0, at - MAX_QUOTE // 2)
    return sentence[start : start + MAX_QUOTE].strip()


def action_words(tool: str) -> list[str]:
    """The words of a tool's name long enough to be an action (``issue_refund``: issue, refund)."""
    name = tool.rsplit(".", 1)[-1]
    return [w.lower() for w in _NAME_WORD.split(name) if len(w) >= MIN_VERB]


def leading_verb(tool: str) -> str:
    return (_NAME_WORD.split(tool.rsplit(".", 1)[-1]) or [""])[0].lower()


def _error(facts: RunFacts, pos: int) -> str | None:
    """What shows an answer failed: the run's failure facts (error status, exit code, traceback),
    else a tool result that is an error by its structure (an ``{"error": …}`` object, an error
    line), quoted by its first line."""
    if pos in facts.failures:
        return facts.failures[pos]
    step = facts.steps[pos]
    if step.kind is StepKind.tool_result and result_failed(step):
        return quotable(step) or None
    return None


@dataclass
class _Said:
    """One actor's sentences that may state an action done (not negated, not a question), in
    order, with the sentences each word token stands in, so that an object's value is found
    through its longest token rather than by reading every later sentence."""

    positions: list[int] = field(default_factory=list)
    sentences: list[str] = field(default_factory=list)
    words: list[list[str]] = field(default_factory=list)
    tokens: dict[str, list[int]] = field(default_factory=dict)  # token -> sentence indices, ascending

    def add(self, pos: int, sentence: str) -> None:
        index = len(self.sentences)
        self.positions.append(pos)
        self.sentences.append(sentence)
        self.words.append(_WORD.findall(sentence))
        for token in set(_TOKEN.findall(sentence)):
            self.tokens.setdefault(token, []).append(index)

    def holding(self, values: set[str], after: int) -> Iterable[int]:
        """The sentences after position ``after`` that name one of ``values``, in order. A few
        values are each looked up by their token; many (a bulk call's ids) are looked for sentence
        by sentence, as one is usually named early and the caller stops at the first claim."""
        if len(values) <= FEW_VALUES:
            return sorted({i for v in values for i in self.naming(v, after)})
        first = bisect_right(self.positions, after)
        return (
            i for i in range(first, len(self.sentences)) if any(names(self.sentences[i], v) for v in values)
        )

    def naming(self, value: str, after: int) -> Iterator[int]:
        """The sentences after position ``after`` that name ``value``, by index: those holding its
        longest token (every value holds a digit, so it has one), each checked whole."""
        core = max(_TOKEN.findall(value), key=len)
        found = self.tokens.get(core, [])
        for i in found[bisect_left(found, bisect_right(self.positions, after)) :]:
            if names(self.sentences[i], value):
                yield i


def names(sentence: str, value: str) -> bool:
    """Whether ``sentence`` names ``value`` whole: not as part of a longer id or number ('150' is
    not named by '$1500', 'W123' not by 'W1234'). The plain substring test first: most values are
    not in most sentences, and a bulk call's thousands of values would each compile a pattern."""
    return value in sentence and _whole(value).search(sentence) is not None


@lru_cache(maxsize=4096)
def _whole(value: str) -> re.Pattern[str]:
    before = r"(?<!\w)" if value[:1].isalnum() or value[:1] == "_" else ""
    after = r"(?!\w)" if value[-1:].isalnum() or value[-1:] == "_" else ""
    return re.compile(before + re.escape(value) + after)


class _Run:
    """What the detector asks of one run more than once, indexed once (a run of thousands of
    failed calls took minutes when every call re-read every later step)."""

    def __init__(self, facts: RunFacts) -> None:
        self.facts = facts
        self.said: dict[str, _Said] = {}
        for pos, step in enumerate(facts.steps):
            if step.kind is StepKind.tool_call:
                continue
            said = self.said.setdefault(step.actor, _Said())
            for m in _SENTENCE.finditer(prose(step.content)):
                if not _NOT_A_CLAIM.search(m.group()):
                    said.add(pos, m.group())
        self.done: dict[tuple[str, str], list[tuple[int, int, set[str]]]] = {}  # (actor, tool) -> calls
        self.first_done: dict[tuple[str, str], int] = {}  # (actor, leading verb) -> first such call
        for p in facts.acts:
            step, answer = facts.steps[p], facts.answer_of(p)
            if step.tool is None or answer is None or not facts.succeeded(answer):
                continue
            self.first_done.setdefault((step.actor, leading_verb(step.tool.name)), p)
            if _error(facts, answer) is None:
                entry = (p, answer, values_of(step.tool.arguments))
                self.done.setdefault((step.actor, step.tool.name), []).append(entry)

    def claims(self, call: int, failed: int) -> Iterator[tuple[int, str, str, set[str]]]:
        """(position, sentence, completed word, objects named) of the agent's later statements that
        the failed call's action was done on one of its objects, while the failure stood."""
        step = self.facts.steps[call]
        assert step.tool is not None
        words, objects = action_words(step.tool.name), values_of(step.tool.arguments)
        said = self.said.get(step.actor)
        if not words or not objects or said is None:
            return
        for i in said.holding(objects, failed):
            pos, sentence = said.positions[i], said.sentences[i]
            named = {v for v in objects if names(sentence, v)}
            done = next((w for w in said.words[i] for a in words if past_form(a, w)), None)
            if done is not None and self.done_since(call, failed, pos, named) is None:
                yield pos, sentence.strip(), done, named

    def done_since(self, call: int, start: int, end: int, named: set[str]) -> int | None:
        """The result of a later call of the agent to the same tool on a named object that
        succeeded between ``start`` and ``end`` (a retry, corrected or not), if any."""
        step = self.facts.steps[call]
        assert step.tool is not None
        calls = self.done.get((step.actor, step.tool.name), [])
        for p, answer, values in calls[bisect_left(calls, (start + 1,)) :]:
            if p >= end:
                break
            if values & named:
                return answer
        return None

    def mismatch_speaks(self, call: int, word: str, pos: int) -> bool:
        """Whether failure_mismatch files this claim: the word is the tool's leading verb and none
        of the agent's earlier calls with that verb succeeded."""
        step = self.facts.steps[call]
        assert step.tool is not None
        verb = leading_verb(step.tool.name)
        return past_form(verb, word) and self.first_done.get((step.actor, verb), pos) >= pos


class FailureContradictionDetector:
    name = "failure_contradiction"
    risk_class = RiskClass.task_failure
    needs_annotations = False

    def detect(self, ctx: AuditContext) -> Iterable[FindingDraft]:
        facts = RunFacts.of(ctx)
        run = _Run(facts)
        drafts: list[FindingDraft] = []
        claimed: set[int] = set()
        for call, failed in self._failed_calls(facts):
            for pos, sentence, word, named in run.claims(call, failed):
                if pos in claimed or run.mismatch_speaks(call, word, pos):
                    continue
                claimed.add(pos)
                drafts.append(self._draft(run, call, failed, pos, sentence, word, named))
                break
        return drafts

    @staticmethod
    def _failed_calls(facts: RunFacts) -> Iterator[tuple[int, int]]:
        """(call, its failed result) for each tool call an agent made whose answer failed."""
        for pos in facts.acts:
            step = facts.steps[pos]
            if step.kind is not StepKind.tool_call or step.tool is None:
                continue
            answer = facts.answer_of(pos)
            if answer is not None and _error(facts, answer) is not None:
                yield pos, answer

    def _draft(
        self, run: _Run, call: int, failed: int, pos: int, sentence: str, word: str, named: set[str]
    ) -> FindingDraft:
        facts = run.facts
        step, result = facts.steps[call], facts.steps[failed]
        assert step.tool is not None
        error = _error(facts, failed) or ""
        return failure_draft(
            facts,
            mode="2.6",
            pos=pos,
            title=f"{step.actor} reported '{word}' after its {step.tool.name} call failed (step {result.step_id})",
            mechanism=(
                f"{step.tool.name} at step {step.step_id} failed at step {result.step_id} ('{error[:120]}'); "
                f"at step {facts.steps[pos].step_id} {step.actor} stated the same action on the same object "
                f"as done ('{sentence[:160]}'), and no call of the same tool with the same arguments "
                "had succeeded in between."
            ),
            violated="an agent may report only actions that took effect; the trace shows this one failed",
            evidence=[facts.unit(failed, error), facts.unit(pos, _claim_quote(sentence, word, named))],
            effect=self._effect(run, call, pos, named),
            path=[
                facts.hop(call, "the call"),
                facts.hop(failed, "the call failed"),
                facts.hop(pos, "reported done"),
            ],
            confidence=0.8,
        )

    def _effect(self, run: _Run, call: int, pos: int, named: set[str]) -> Effect:
        facts = run.facts
        retried = run.done_since(call, pos, len(facts.steps), named)
        if retried is not None:
            return intercepted(
                facts.steps[retried].step_id, "the same action on the object succeeded after the claim"
            )
        step = facts.steps[pos]
        humans = {s.actor for s in facts.steps if s.actor_kind is ActorKind.human}
        unaddressed_then_answered = step.recipients is None and any(
            s.actor in humans for s in facts.steps[pos + 1 :]
        )  # a chat's turns name no recipient: the human who answers next was told
        if set(step.recipients or []) & humans or unaddressed_then_answered or pos == facts.final_pos:
            return realized(
                "the claim reached a human or was the run's final word",
                "someone was told that an action took effect which the trace shows failed",
            )
        return unestablished("the claim reached no endpoint the trace shows")

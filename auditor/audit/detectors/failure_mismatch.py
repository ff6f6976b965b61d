"""Says one thing, does another (MAST 2.6): an agent announces a tool and calls another, or reports
an action it never took.

The trace's own tool calls give the vocabulary (tool names, last dotted segment; the verb is a
name's first word: ``cancel`` of ``cancel_reservation``). Two facts:

- *announced, not done*: an agent's step says it will use a named tool of the vocabulary ("I will
  use the `next_song` API", "Let me call get_user_details") and the act that follows (the same
  step's own call, else the agent's next tool call or code) neither calls that tool nor names it;
- *reported, not done*: an agent states in the past tense that an action was done ("I have
  cancelled…", "your reservation has been updated", "successfully booked") whose verb is a tool's
  verb, and no earlier call of that agent to a tool with that verb got a result that did not fail
  (never called, or its only calls failed).

Negated, conditional or planned sentences are no statements. Filed at the statement, by its
agent. Disposition: a report that reached a human or the run's final step is realized (someone
was told of an action that did not happen), unless a later call of that tool succeeded (anomaly
with interception, naming the result); an announcement followed by a different act is a lead
(the act itself may have been the right one).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass

from auditor.audit.detectors.base import AuditContext, FindingDraft
from auditor.audit.detectors.failure_facts import (
    Effect,
    RunFacts,
    code_of,
    failure_draft,
    intercepted,
    realized,
    unestablished,
)
from auditor.audit.detectors.unverified_relay import prose
from schemas import ActorKind, RiskClass, StepKind

_INTENT = re.compile(
    r"(?i)\b(?:I will|I'll|I am going to|I'm going to|let me|let's|I need to|I should|now I will)\s+"
    r"(?:\w+\s+){0,2}?(?:use|call|run|invoke|execute|try)\s+(?:the\s+)?`?(?P<name>[A-Za-z_][\w.]*)`?"
)
_GUARD = re.compile(  # case-sensitive: "May" the month is no modal ("may"); see _guarded
    r"\b(?:not|never|no|cannot|unable|could not|couldn't|didn't|haven't|hasn't|wasn't|weren't|if|once|"
    r"until|unless|whether|should|would|will|let's|let us|please|need to|needs to|must|going to|plan to|"
    r"can|could|may|might|want to|wish to|would you|do you)\b|\?"
)
_IRREGULAR = {"send": "sent", "run": "ran", "get": "got", "find": "found", "buy": "bought", "pay": "paid"}
_PAST_IRREGULAR = frozenset(_IRREGULAR.values())
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
MIN_VERB = 4


def _guarded(sentence: str) -> bool:
    """A negated, conditional, planned or asking sentence (its first word read in lower case)."""
    text = sentence.strip()
    return bool(_GUARD.search(text[:1].lower() + text[1:]))


def vocabulary(facts: RunFacts) -> dict[str, set[str]]:
    """Tool names called in the trace, by verb (the name's first word, lower-cased)."""
    out: dict[str, set[str]] = {}
    for step in facts.steps:
        if step.kind is StepKind.tool_call and step.tool is not None:
            name = step.tool.name.rsplit(".", 1)[-1]
            verb = re.split(r"[_\W]|(?<=[a-z])(?=[A-Z])", name)[0].lower()
            if len(verb) >= MIN_VERB or verb in _IRREGULAR:
                out.setdefault(verb, set()).add(name)
    return out


def past_form(verb: str, word: str) -> bool:
    """Whether ``word`` is the past form of ``verb`` (cancelled, updated, booked, sent)."""
    w = word.lower()
    if _IRREGULAR.get(verb) == w:
        return True
    stem = verb[:-1] if verb.endswith("e") else verb
    return w.startswith(stem) and w.endswith("ed") and len(w) - len(stem) <= 4


@dataclass
class _Calls:
    """One agent's calls of one verb's tools, as a report of that verb needs them: where the first
    answered call stands and its answer, and where the first call whose answer did not fail stands
    (a report after it is backed). Made once per audit, so that each report costs no scan of the
    run (800 failed calls each followed by claims took seconds, growing with the square)."""

    failed_at: int = sys.maxsize
    failed: int | None = None
    succeeded_at: int = sys.maxsize


def _answered_calls(facts: RunFacts, vocab: dict[str, set[str]]) -> dict[tuple[str, str], _Calls]:
    verb_of = {name: verb for verb, tools in vocab.items() for name in tools}
    out: dict[tuple[str, str], _Calls] = {}
    for p in facts.acts:
        step = facts.steps[p]
        verb = verb_of.get(step.tool.name.rsplit(".", 1)[-1]) if step.tool is not None else None
        if verb is None:
            continue
        record = out.setdefault((step.actor, verb), _Calls())
        answer = facts.answer_of(p)
        if answer is None:
            continue
        if record.failed is None:
            record.failed_at, record.failed = p, answer
        if answer not in facts.failures and record.succeeded_at == sys.maxsize:
            record.succeeded_at = p
    return out


class FailureMismatchDetector:
    name = "failure_mismatch"
    risk_class = RiskClass.task_failure
    needs_annotations = False

    def detect(self, ctx: AuditContext) -> Iterable[FindingDraft]:
        facts = RunFacts.of(ctx)
        vocab = vocabulary(facts)
        if not vocab:
            return []
        names = {n.lower() for ns in vocab.values() for n in ns}
        calls = _answered_calls(facts, vocab)
        drafts: list[FindingDraft] = []
        reported: set[str] = set()
        for pos in facts.acts:
            step = facts.steps[pos]
            if pos == 0 or facts.tf.ledger(step):
                continue
            text = prose(step.content) if step.kind is not StepKind.tool_call else self._comment(step.content)
            found = self._reported(facts, pos, text, vocab, calls, reported)
            if found is not None and found[1] is not None:
                reported.add(found[0])
                drafts.append(found[1])
            announced = self._announced(facts, pos, text, names)
            if announced is not None:
                drafts.append(announced)
        return drafts

    @staticmethod
    def _comment(content: str) -> str:
        """A tool call's own words: its comment lines (the call itself is the act)."""
        return "\n".join(
            ln.strip().lstrip("#").strip() for ln in content.splitlines() if ln.strip().startswith("#")
        )

    # -- reported, not done ----------------------------------------------------------------------
    def _reported(
        self,
        facts: RunFacts,
        pos: int,
        text: str,
        vocab: dict[str, set[str]],
        calls: dict[tuple[str, str], _Calls],
        reported: set[str],
    ) -> tuple[str, FindingDraft | None] | None:
        """The first action this step reports done with no call behind it: its verb, and its
        finding unless that verb was reported before (one finding per verb)."""
        step = facts.steps[pos]
        for sm in _SENTENCE.finditer(text):
            sentence = sm.group()
            if _guarded(sentence):
                continue
            for word in re.findall(r"[A-Za-z]+", sentence):
                lower = word.lower()
                if not (lower.endswith("ed") or lower in _PAST_IRREGULAR):
                    continue  # no past form (past_form's own test, made once per word, not per verb)
                verb = next((v for v in vocab if past_form(v, word)), None)
                if verb is None or not self._states_done(sentence, word):
                    continue
                if step.tool is not None and step.tool.name.rsplit(".", 1)[-1] in vocab[verb]:
                    continue  # the step's own call takes the action it speaks of
                earlier = calls.get((step.actor, verb))
                if earlier is not None and earlier.succeeded_at < pos:
                    continue
                failed = earlier.failed if earlier is not None and earlier.failed_at < pos else None
                if verb in reported:
                    return verb, None
                return verb, self._report_draft(facts, pos, sentence.strip(), word, verb, vocab[verb], failed)
        return None

    @staticmethod
    def _states_done(sentence: str, word: str) -> bool:
        """A first-person or passive statement that the action is done ("I cancelled", "has been
        cancelled", "successfully cancelled")."""
        w = re.escape(word)
        return bool(
            re.search(
                rf"(?i)\b(?:I|we)(?:'ve| have)?(?: \w+){{0,2}}? {w}\b|\b(?:has|have|was|were|is|are) (?:now |been |successfully |now been )*{w}\b"
                rf"|\bsuccessfully {w}\b",
                sentence,
            )
        )

    def _report_draft(
        self,
        facts: RunFacts,
        pos: int,
        sentence: str,
        word: str,
        verb: str,
        tools: set[str],
        failed: int | None,
    ) -> FindingDraft:
        step = facts.steps[pos]
        tool_list = ", ".join(sorted(tools))
        why = (
            f"its only call of {tool_list} failed (step {facts.steps[failed].step_id})"
            if failed is not None
            else f"it never called {tool_list} before saying so"
        )
        evidence = [facts.unit(pos, sentence)]
        path = [facts.hop(pos, "action reported")]
        if failed is not None:
            evidence.insert(0, facts.unit(failed, facts.failures.get(failed)))
            path.insert(0, facts.hop(failed, "the call failed"))
        return failure_draft(
            facts,
            mode="2.6",
            pos=pos,
            title=f"{step.actor} reported '{word}' but {why}",
            mechanism=f"{step.actor} stated at step {step.step_id} that it {word} ('{sentence[:120]}'), but {why}.",
            violated="an agent may report only actions it took; this action has no successful call behind it",
            evidence=evidence,
            effect=self._report_effect(facts, pos, tools),
            path=path,
            confidence=0.75,
        )

    def _report_effect(self, facts: RunFacts, pos: int, tools: set[str]) -> Effect:
        step = facts.steps[pos]
        for p in facts.acts:
            later = facts.steps[p]
            if p <= pos or later.actor != step.actor or later.tool is None:
                continue
            answer = facts.answer_of(p)
            if later.tool.name.rsplit(".", 1)[-1] in tools and answer is not None and facts.succeeded(answer):
                return intercepted(
                    facts.steps[answer].step_id,
                    f"the action was taken after all, at step {facts.steps[answer].step_id}",
                )
        humans = {s.actor for s in facts.steps if s.actor_kind is ActorKind.human}
        told = set(step.recipients or []) & humans or (
            step.recipients is None
            and humans
            and any(facts.steps[p].actor in humans for p in range(pos + 1, len(facts.steps)))
        )
        if told or pos == facts.final_pos:
            return realized(
                "the report reached a human or was the run's final word",
                "someone was told of an action that did not happen",
            )
        return unestablished("the report reached no endpoint the trace shows")

    # -- announced, not done ----------------------------------------------------------------------
    def _announced(self, facts: RunFacts, pos: int, text: str, names: set[str]) -> FindingDraft | None:
        step = facts.steps[pos]
        m = _INTENT.search(text)
        if m is None:
            return None
        name = m.group("name").rsplit(".", 1)[-1]
        if name.lower() not in names:
            return None
        act = pos if step.kind is StepKind.tool_call or code_of(step.content) else self._next_act(facts, pos)
        if act is None:
            return None
        target = facts.steps[act]
        called = target.tool.name.rsplit(".", 1)[-1] if target.tool is not None else None
        body = target.content if act != pos else target.content.replace(m.group(), "")
        if (called or "").lower() == name.lower() or name.lower() in body.lower():
            return None
        return failure_draft(
            facts,
            mode="2.6",
            pos=act,
            title=f"{step.actor} announced {name} but did something else",
            mechanism=(
                f"{step.actor} said at step {step.step_id} '{m.group()}', and its act at step {target.step_id} "
                f"{'calls ' + called if called else 'runs code'} without using or naming {name}."
            ),
            violated="an agent's act must match what it announced; the act differs from the announced tool",
            evidence=[facts.unit(pos, m.group()), facts.unit(act) if act != pos else None],
            effect=unestablished(
                "the different act may itself have been the right one; its effect is not judged"
            ),
            path=[facts.hop(pos, "announced"), facts.hop(act, "different act")] if act != pos else None,
            confidence=0.6,
        )

    @staticmethod
    def _next_act(facts: RunFacts, pos: int) -> int | None:
        actor = facts.steps[pos].actor
        for p in facts.acts:
            if p <= pos or facts.steps[p].actor != actor:
                continue
            if facts.steps[p].kind is StepKind.tool_call or code_of(facts.steps[p].content):
                return p
            return None  # its next act is talk: nothing to compare
        return None

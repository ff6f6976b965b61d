"""Success claimed with no check run (MAST 3.2), or on a check that failed or tested something else
(MAST 3.3).

A claim is an agent's sentence stating that something works, passed or was verified (the
relay detector's success phrases, and first-person "we verified / I have confirmed" sentences);
a negated, conditional or planned claim is none, and neither is the opening (it states the task)
nor a coordinator's structured status ledger (its reasons are a record, not a claim). Phrases only nominate; the decision is what the
trace's observations (``failure_facts``) show before the claim:

- *no check at all* (3.2): no observation precedes the claim anywhere in the run (a log that
  records tool calls but never their results says nothing about checks, and is not judged);
- *its own check failed* (3.3): the claimant's latest act that an observation answered before the
  claim (its tool call or its code) got a failed observation, and nothing passed after it;
- *a check written, never run* (3.2): an agent wrote test code (a fenced or plain code act that
  defines ``test_`` functions, a ``unittest.TestCase`` or imports pytest) and no observation
  follows it anywhere in the run: the tests were never executed. A lead: whether the untested
  work holds is not in the trace;
- *the check tested something else* (3.3): the claim names a value (the answer the step
  delivers: ``FINAL ANSWER:``, ``\\boxed{}``; or, for a claim of verification, a quoted term of
  its sentence) that stands in no observation before the claim and not in the task text:
  whatever ran did not show it.

Failed checks relayed by *another* participant are the relay detector's; this one files the
claimant's own. Disposition: a later observation that shows the claimed value or passes the
claimant's check verified it after all (anomaly with interception, naming it); a claim after
which nothing ran before the run ended (its last done marker, else its final step) is realized:
the run ended on it; otherwise a lead.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from auditor.attribution.facts import normalise
from auditor.detectors.base import AuditContext, FindingDraft
from auditor.detectors.failure_facts import (
    Effect,
    RunFacts,
    failure_draft,
    intercepted,
    realized,
    unestablished,
)
from auditor.detectors.unverified_relay import prose, success_claim
from schemas import RiskClass, StepKind

_VERIFIED = re.compile(
    r"(?i)\b(?:I|we)(?: have|'ve)?(?: \w+){0,3} (?:verified|confirmed|validated|double-checked|cross-checked)\b"
)
_GUARD = re.compile(
    r"(?i)\b(?:not|never|no|cannot|unable|could not|couldn't|didn't|haven't|hasn't|if|once|until|unless|"
    r"whether|should|would|will|let's|let us|please|need to|needs to|must|to be|going to|plan to)\b"
)
_QUOTED = re.compile(r"[\"“]([^\"”\n]{2,60})[\"”]|(?<!\w)'([^'\n]{2,60})'(?!\w)")
_ANSWER = re.compile(r"FINAL ANSWER:\s*([^\n]+)|\\boxed\{([^{}\n]+)\}")
_SENTENCE_END = ".!?\n"
_VERIFYING = re.compile(r"(?i)verif|confirm|validat|checked")
_TEST_CODE = re.compile(r"(?m)^\s*(?:async\s+)?def test_\w*\s*\(|\bunittest\.TestCase\b|^\s*import pytest\b")


def claim_of(text: str) -> tuple[str, str] | None:
    """(the claim's words, its sentence) for the first unguarded claim in an agent's prose."""
    body = prose(text)
    words = success_claim(text, body)
    if words is None:
        for m in _VERIFIED.finditer(body):
            start = 1 + max(body.rfind(c, 0, m.start()) for c in _SENTENCE_END)
            if not _GUARD.search(body[start : m.end()]):
                words = m.group()
                break
    if words is None:
        return None
    at = body.find(words)
    start = 1 + max(body.rfind(c, 0, at) for c in _SENTENCE_END)
    ends = [e for e in (body.find(c, at + len(words)) for c in _SENTENCE_END) if e >= 0]
    return words, body[start : min(ends, default=len(body))].strip()


def claimed_values(step_text: str, words: str, sentence: str) -> list[str]:
    """The values a claim names: the answer its step delivers, and the quoted terms of its sentence
    when the claim is one of verification ("verified that the word is "clichéd""); in a claim that
    something works or was fixed, quotes name the artefact, not a checked value."""
    found = [a or b for a, b in _QUOTED.findall(sentence)] if _VERIFYING.search(words) else []
    found += [(a or b).strip() for a, b in _ANSWER.findall(step_text)]
    return [v for v in dict.fromkeys(found) if len(normalise(v)) >= 2]


class FailureVerificationDetector:
    name = "failure_verification"
    risk_class = RiskClass.task_failure
    needs_annotations = False

    def detect(self, ctx: AuditContext) -> Iterable[FindingDraft]:
        facts = RunFacts.of(ctx)
        task = normalise(facts.task)
        drafts = []
        if (unrun := self._unrun_tests(facts)) is not None:
            drafts.append(unrun)
        for pos in facts.acts:
            step = facts.steps[pos]
            if pos == 0 or step.kind is StepKind.tool_call or facts.tf.ledger(step):
                continue  # the opening states the task; a ledger's reasons are a status record
            claim = claim_of(step.content)
            if claim is None:
                continue
            draft = self._judge(facts, pos, claim, task)
            if draft is not None:
                drafts.append(draft)
                break  # the first unsupported claim is the failure; later ones repeat it
        return drafts

    def _judge(self, facts: RunFacts, pos: int, claim: tuple[str, str], task: str) -> FindingDraft | None:
        words, sentence = claim
        step = facts.steps[pos]
        before = [p for p in sorted(facts.observations) if p < pos]
        if not before:
            if not facts.observations and any(st.kind is StepKind.tool_call for st in facts.steps):
                return None  # the log records calls but no results: what came back is unknown
            return self._draft(facts, pos, words, "3.2", "no check of any kind ran before it", None, [])
        own = self._own_check(facts, pos)
        if (
            own is not None
            and own in facts.failures
            and not any(facts.succeeded(p) for p in before if p > own)
        ):
            return self._draft(
                facts, pos, words, "3.3", f"its own check failed at step {facts.steps[own].step_id}", own, []
            )
        values = claimed_values(step.content, words, sentence)
        shown = [v for v in values if self._shown(facts, normalise(v), before) or normalise(v) in task]
        unshown = [v for v in values if v not in shown]
        if values and not shown:
            return self._draft(
                facts,
                pos,
                words,
                "3.3",
                f"no observation before it shows {', '.join(repr(v) for v in unshown[:3])}: what ran tested something else",
                None,
                unshown,
            )
        return None

    def _unrun_tests(self, facts: RunFacts) -> FindingDraft | None:
        last_observed = max(facts.observations, default=-1)
        for pos in facts.acts:
            m = _TEST_CODE.search(facts.steps[pos].content)
            if m is None or pos < last_observed:
                continue
            step = facts.steps[pos]
            return failure_draft(
                facts,
                mode="3.2",
                pos=pos,
                title=f"{step.actor} wrote tests that never ran",
                mechanism=(
                    f"{step.actor} wrote test code at step {step.step_id} ('{m.group().strip()}'); no execution "
                    "or tool result follows it anywhere in the run."
                ),
                violated="a check that is written must be run before the work counts as verified",
                evidence=[facts.unit(pos, m.group().strip())],
                effect=unestablished("whether the untested work holds is not in the trace"),
            )
        return None

    @staticmethod
    def _shown(facts: RunFacts, needle: str, positions: list[int]) -> bool:
        return any(needle in facts.tf.texts[p] for p in positions)

    @staticmethod
    def _own_check(facts: RunFacts, pos: int) -> int | None:
        """The observation that answered the claimant's latest act answered before the claim."""
        actor = facts.steps[pos].actor
        for act in reversed([p for p in facts.acts if p < pos and facts.steps[p].actor == actor]):
            nxt = act + 1
            if nxt < pos and nxt in facts.observations:
                return nxt
        return None

    def _effect(self, facts: RunFacts, pos: int, own: int | None, values: list[str]) -> Effect:
        later = [p for p in sorted(facts.observations) if p > pos]
        for p in later:
            if (own is not None and facts.succeeded(p)) or any(
                normalise(v) in facts.tf.texts[p] for v in values
            ):
                return intercepted(
                    facts.steps[p].step_id, f"a later observation (step {facts.steps[p].step_id}) checked it"
                )
        ends = [d.pos for d in facts.declarations if d.pos >= pos]
        end = ends[-1] if ends else facts.final_pos
        if not later and end is not None and end >= pos:
            return realized(
                f"no check ran after the claim before the run ended at step {facts.steps[end].step_id}",
                f"the run ended (step {facts.steps[end].step_id}) on a success no check showed",
            )
        return unestablished("later observations did not show whether the claim held")

    def _draft(
        self,
        facts: RunFacts,
        pos: int,
        words: str,
        mode: str,
        why: str,
        own: int | None,
        values: list[str],
    ) -> FindingDraft:
        step = facts.steps[pos]
        evidence = [facts.unit(pos, words)]
        path = [facts.hop(pos, "success claimed")]
        if own is not None:
            evidence.insert(0, facts.unit(own, facts.failures.get(own)))
            path.insert(0, facts.hop(own, "own check failed"))
        kind = "with no check run" if mode == "3.2" else "on a check that did not show it"
        return failure_draft(
            facts,
            mode=mode,
            pos=pos,
            title=f"{step.actor} claimed success {kind} ('{words}')",
            mechanism=f"{step.actor} stated '{words}' at step {step.step_id}, but {why}.",
            violated="a success claim must rest on a check that ran and showed it",
            evidence=evidence,
            effect=self._effect(facts, pos, own, values),
            path=path,
        )

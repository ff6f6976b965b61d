"""Step repetition (MAST 1.3): the same act performed again and again while nothing new comes back.

An agent's act is the same act when its signature matches (the same tool with the same arguments,
the same code, the same message up to whitespace, progress counters and clock times; see
``failure_facts``). Between two performances, *new information* is any step of another
participant whose text (whitespace collapsed, lower-cased; framework records with their progress
counters and clock times masked) did not occur earlier in the trace. A tool call or code act
repeats without new information only when its answer is in the trace: with no observation at all
between two performances (a log that does not record results) nothing is known about what came
back, and no loop is claimed. A loop is ``LOOP_LENGTH`` (3) or more performances of one act by
one agent with no new information between consecutive ones, except that the first answer may be
new (the same failing command run three times, with the same error twice); the second
performance is the first anomalous act. An act of the same agent that changes files between two
performances (an edit, a command that writes: ``test_runs.writes_files``) makes the next one a
new experiment, not the same act again: the build rerun after the code changed is the
fix-and-rerun loop, whatever it printed.

Disposition: a loop of failing performances is intercepted only where a later performance of
the same check (the same tool, or the same agent's code) passed, naming that result; otherwise
its purpose was never achieved (realized). A loop whose answers did not fail is realized when the
run ends with nothing new after its last performance, and intercepted by the first new
observation after it otherwise. Repeating an act that brings a different answer each time
(skipping to the next song, paging a listing) is progress, never a loop.
"""

from __future__ import annotations

import hashlib
from array import array
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Iterable
from itertools import pairwise

from auditor.audit.detectors.base import AuditContext, FindingDraft
from auditor.audit.detectors.failure_facts import (
    COUNTER,
    RunFacts,
    collapse,
    failure_draft,
    intercepted,
    realized,
)
from auditor.audit.detectors.test_runs import writes_files
from schemas import ActorKind, RiskClass

LOOP_LENGTH = 3


class Novelty:
    """Where the trace said something new: the steps whose text (as compared for novelty: module
    doc) no earlier step had. Kept as positions and running counts, not as the texts (a trace of
    a million steps would hold each text twice): a step is new information for an actor when it
    is new and another participant's."""

    def __init__(self, facts: RunFacts) -> None:
        self.facts = facts
        seen: set[bytes] = set()  # 128-bit digests of the texts said so far
        self.new = array("q")  # positions of the new steps, in order
        self.by_actor: dict[str, array[int]] = {}  # the same, per actor
        for pos, step in enumerate(facts.steps):
            text = collapse(step.content).lower()
            if step.actor_kind is ActorKind.system:
                text = COUNTER.sub("#", text)  # a record's progress counter or clock time says nothing new
            if not text:
                continue
            key = hashlib.blake2b(text.encode(), digest_size=16).digest()
            if key not in seen:
                seen.add(key)
                self.new.append(pos)
                self.by_actor.setdefault(step.actor, array("q")).append(pos)

    def between(self, actor: str, lo: int, hi: int) -> int:
        """How many steps in positions ``lo`` .. ``hi - 1`` were new information for ``actor``."""
        own = self.by_actor.get(actor, ())
        everyone = bisect_left(self.new, hi) - bisect_left(self.new, lo)
        return everyone - (bisect_left(own, hi) - bisect_left(own, lo))

    def next_after(self, actor: str, pos: int) -> int | None:
        """The first step after ``pos`` that was new information for ``actor``, or None."""
        steps = self.facts.steps
        for i in range(bisect_right(self.new, pos), len(self.new)):
            if steps[self.new[i]].actor != actor:
                return self.new[i]
        return None


class FailureRepetitionDetector:
    name = "failure_repetition"
    risk_class = RiskClass.task_failure
    needs_annotations = False

    def detect(self, ctx: AuditContext) -> Iterable[FindingDraft]:
        facts = RunFacts.of(ctx)
        novelty = Novelty(facts)
        drafts = []
        for actor, acts in facts.acts_by_actor.items():
            covered = -1
            for loop in sorted(self._loops(facts, novelty, actor, acts)):
                answered = all(facts.observed_between(a, b) for a, b in pairwise(loop))
                if loop[0] <= covered:
                    continue  # interleaved with a loop already filed (a thought between two retries)
                if answered or facts.signature(loop[0]).startswith("text:"):  # type: ignore[union-attr]
                    drafts.append(self._draft(facts, loop, novelty))
                    covered = loop[-1]
        return drafts

    def _loops(self, facts: RunFacts, novelty: Novelty, actor: str, acts: array[int]) -> Iterable[list[int]]:
        """Runs of one act of ``actor`` whose consecutive performances had no new information and no
        change of files by ``actor`` between them, each with the performance just before the run
        (its answer may have been new: the first answer always is); a loop has at least
        ``LOOP_LENGTH`` performances in all. Only acts performed that often are grouped (a long
        trace's acts are mostly distinct)."""
        often = {sig for sig, n in Counter(facts.signature(p) for p in acts).items() if n >= LOOP_LENGTH}
        often.discard(None)
        by_sig: dict[str, list[int]] = {}
        for pos in acts:
            sig = facts.signature(pos)
            if sig in often:
                by_sig.setdefault(sig, []).append(pos)  # type: ignore[arg-type]
        if not by_sig:
            return
        writes = array("q", (p for p in acts if writes_files(facts.steps[p])))
        for positions in by_sig.values():
            loop = positions[:1]
            for pos in positions[1:]:
                wrote = bisect_left(writes, pos) > bisect_right(writes, loop[-1])
                if novelty.between(actor, loop[-1] + 1, pos) == 0 and not wrote:
                    loop.append(pos)
                    continue
                if len(loop) >= LOOP_LENGTH:
                    yield loop
                loop = [loop[-1], pos]  # the previous performance opens the next run
            if len(loop) >= LOOP_LENGTH:
                yield loop

    def _draft(self, facts: RunFacts, loop: list[int], novelty: Novelty) -> FindingDraft:
        first, second, last = loop[0], loop[1], loop[-1]
        n = len(loop)
        step = facts.steps[second]
        if any(facts.answer_of(p) in facts.failures for p in loop):
            retry = next(
                (
                    answer
                    for p in facts.acts
                    if p > last
                    and facts.same_check(p, first)
                    and (answer := facts.answer_of(p)) is not None
                    and facts.succeeded(answer)
                ),
                None,
            )
            if retry is not None:
                effect = intercepted(
                    facts.steps[retry].step_id,
                    f"the repeated act's check passed later, at step {facts.steps[retry].step_id}",
                )
            else:
                effect = realized(
                    "the repeated act kept failing and never passed before the run ended",
                    f"{n} performances of one act failed the same way; what it was for was never achieved",
                )
        elif (later := novelty.next_after(step.actor, last)) is not None:
            effect = intercepted(
                facts.steps[later].step_id,
                f"new information arrived at step {facts.steps[later].step_id} and the loop stopped",
            )
        else:
            effect = realized(
                f"nothing new came back after the last repetition (step {facts.steps[last].step_id}) "
                "until the run ended",
                f"the run ended inside the loop: {n} performances of one act, the last {n - 1} without new information",
            )
        between = next(
            (
                p
                for p in range(first + 1, second)
                if facts.steps[p].actor != step.actor and facts.steps[p].content.strip()
            ),
            None,
        )
        evidence = [facts.unit(first), facts.unit(second), facts.unit(last)]
        if between is not None:
            evidence.append(facts.unit(between))
        return failure_draft(
            facts,
            mode="1.3",
            pos=second,
            title=f"{step.actor} repeated the same act {n} times with nothing new in between",
            mechanism=(
                f"{step.actor} performed the act of step {facts.steps[first].step_id} again at "
                + ", ".join(facts.steps[p].step_id for p in loop[1:])
                + "; no other participant said anything new between consecutive performances."
            ),
            violated="a repeated act must follow new information; this one repeated unchanged after unchanged answers",
            evidence=evidence,
            effect=effect,
            path=[facts.hop(p, "repeated act" if p != first else "first performance") for p in loop],
            confidence=0.8,
        )

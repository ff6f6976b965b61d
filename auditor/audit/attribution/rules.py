"""The embedded ``rules`` strategy: where the error first enters the flow that reaches the answer.

Signals (each a vote with a fixed weight, set by argument, not fitted per trace):

- **coordinated runs** (one agent addresses the others by name): when the coordinator's own
  structured ledger declares the request satisfied, the run ended on an answer it accepted — the
  coordinator is responsible, at the step where it first adopted the delivered answer (or, when the
  answer cannot be traced, where it first declared success: an unverified claim accepted). Unless
  the worker report it adopted the answer from is a claim (the worker states the answer on its own
  word, showing no page, file or program output behind it): then the wrong fact entered with that
  claim, and the worker is responsible at it; the coordinator's acceptance only follows. When
  it never declared success, the run stalled on delegated work: the worker is responsible, from its
  first delegated act onwards.
- **group chats** (no coordinator): the first substantive act — the opening itself when its code
  was executed, else the first agent turn after the task statement; the code act behind the
  first failed execution (exit status ≠ 0), since the flow that follows inherits that failure;
  and the first unsupported claim: an agent's turn that states at least ``CLAIM_VALUES`` values
  (figures, names) no earlier step held, while showing no code, page, file or program output
  behind them, and that another agent then answers. The values entered the run there on that
  agent's word and the others built on them: where the run first diverged when they are wrong,
  ahead of a failed execution (which its author or the next agent can repair) and of a first act
  that only plans.
- **provenance**: the first step where the delivered answer's value appears.
- **last correct alternative** (only when the correct answer is given): the first agent step after
  the last step that still carried the correct answer.
"""

from __future__ import annotations

from auditor.audit.attribution.citations import Citer
from auditor.audit.attribution.facts import TraceFacts, agent_name, normalise
from auditor.audit.attribution.result import Attribution, Vote, assemble
from schemas import Trace, TraceStep

W_PRIMARY = 1.0
W_FAILED_EXECUTION = 1.2
W_PROVENANCE = 0.5
W_ALTERNATIVE = 0.4
W_DECLARED = 0.3
W_CLAIM = 1.3
# one new word can be a word choice; a stated fact brings a figure or a name with its context
CLAIM_VALUES = 2


class RulesStrategy:
    name = "rules"
    needs_model = False

    def attribute(
        self, trace: Trace, *, ground_truth: str | None = None, model: str | None = None
    ) -> Attribution:
        facts = TraceFacts(trace)
        votes = self.votes(trace, facts, ground_truth)
        return assemble(trace, self.name, votes, used_ground_truth=bool(ground_truth), notes=facts.notes)

    def votes(
        self, trace: Trace, facts: TraceFacts, ground_truth: str | None = None, cite: Citer | None = None
    ) -> list[Vote]:
        """The signals' votes (the review adds its findings' votes to these, and cites over its own
        graph through ``cite``)."""
        cite = cite or Citer(trace)
        votes: list[Vote] = []
        if facts.coordinator:
            votes += _coordinated(facts, cite)
        else:
            votes += _group_chat(facts, cite)
        votes += _provenance(facts, cite)
        if ground_truth:
            votes += _last_alternative(facts, cite, ground_truth)
        if not votes and facts.first_act is not None:
            votes.append(
                Vote(
                    facts.first_act.step_id,
                    W_PRIMARY,
                    "first act (no other signal)",
                    cite.cite(facts.first_act.step_id),
                )
            )
        return votes


def _coordinated(facts: TraceFacts, cite: Citer) -> list[Vote]:
    coord = facts.coordinator
    satisfied = [s for s, flags in facts.ledgers if flags.get("is_request_satisfied")]
    votes: list[Vote] = []
    if satisfied:
        declared = satisfied[0]
        adopted = _adoption(facts)
        step = adopted or declared
        claim = _adopted_claim(facts, step)
        if claim is not None:
            votes.append(
                Vote(
                    claim.step_id,
                    W_PRIMARY,
                    f"{agent_name(claim.actor)} stated the delivered answer on its own word (no page, file "
                    f"or program output behind it); {coord} adopted it at {step.step_id}",
                    cite.cite(claim.step_id, facts.final_answer),
                )
            )
        else:
            why = (
                f"{coord} adopted the delivered answer here without it being verified"
                if adopted
                else f"{coord} first declared the request satisfied here"
            )
            votes.append(Vote(step.step_id, W_PRIMARY, why, cite.cite(step.step_id, facts.final_answer)))
        votes.append(
            Vote(
                declared.step_id,
                W_DECLARED,
                f"{coord}'s ledger: is_request_satisfied true",
                cite.cite(declared.step_id, '"is_request_satisfied"'),
            )
        )
        return votes
    facts.notes.append(f"{coord} never declared the request satisfied: the run stalled on delegated work")
    first_worker = next(
        (s for s in facts.steps if facts.is_agent(s) and agent_name(s.actor) != coord and s.index > 0), None
    )
    if first_worker is not None:
        votes.append(
            Vote(
                first_worker.step_id,
                W_PRIMARY,
                "first delegated act of a run that never reached its goal",
                cite.cite(first_worker.step_id),
            )
        )
    stalls = [s for s, flags in facts.ledgers if flags.get("is_progress_being_made") is False]
    if stalls:
        before = [
            s for s in facts.steps[: stalls[0].index] if facts.is_agent(s) and agent_name(s.actor) != coord
        ]
        if before:
            worker = before[-1]
            votes.append(
                Vote(
                    worker.step_id,
                    W_DECLARED,
                    f"last worker act before {coord} first recorded no progress",
                    cite.cite(worker.step_id),
                )
            )
    return votes


def _adoption(facts: TraceFacts) -> TraceStep | None:
    """The coordinator's first step that carries the delivered answer, from its first appearance on."""
    answer, final = facts.final_answer, facts.final_step
    if not answer or final is None:
        return None
    first = facts.first_mention(answer, before=final.index)
    if first is None:
        return None
    needle = normalise(answer)
    return next(
        (
            s
            for s in facts.mentions(needle, first.index, final.index)
            if agent_name(s.actor) == facts.coordinator
        ),
        None,
    )


def _adopted_claim(facts: TraceFacts, adoption: TraceStep) -> TraceStep | None:
    """The worker report the coordinator adopted the answer from (the last one before ``adoption``),
    when that report is a claim that states the delivered answer."""
    answer = facts.final_answer
    report = next(
        (
            s
            for s in reversed(facts.steps[: adoption.index])
            if facts.is_agent(s) and agent_name(s.actor) != facts.coordinator
        ),
        None,
    )
    if not answer or report is None or not facts.is_claim(report) or not facts.states(report, answer):
        return None
    return report


def _group_chat(facts: TraceFacts, cite: Citer) -> list[Vote]:
    votes: list[Vote] = []
    act = facts.first_act
    if act is not None:
        why = "first substantive act (its code ran next)" if act.index == 0 else "first substantive act"
        votes.append(Vote(act.step_id, W_PRIMARY, why, cite.cite(act.step_id)))
    failed = next((e for e in facts.executions if e.failed), None)
    if failed is not None and failed.code_step is not None:
        votes.append(
            Vote(
                failed.code_step.step_id,
                W_FAILED_EXECUTION,
                f"wrote the code whose execution failed first (exit code {failed.exit_code} at {failed.result.step_id})",
                cite.cite(failed.code_step.step_id, "```") + cite.cite(failed.result.step_id),
            )
        )
    claim = _first_unsupported_claim(facts)
    if claim is not None:
        step, values = claim
        shown = ", ".join(sorted(values)[:5])
        votes.append(
            Vote(
                step.step_id,
                W_CLAIM,
                f"{agent_name(step.actor)} stated values no earlier step held ({shown}) on its own word; "
                "the other agents built on them",
                cite.cite(step.step_id),
            )
        )
    return votes


def _first_unsupported_claim(facts: TraceFacts) -> tuple[TraceStep, set[str]] | None:
    """The first agent turn (after the opening) that states ``CLAIM_VALUES`` or more values no
    earlier step held, shows no code nor located source nor execution status, and is followed by
    another agent's turn; with the new values."""
    last_turn = {agent_name(s.actor): s.index for s in facts.steps if facts.is_agent(s)}
    earlier: set[str] = set(facts.texts[0].split())
    for step in facts.steps[1:]:
        if facts.is_agent(step) and not facts.has_code(step) and facts.is_claim(step):
            speaker = agent_name(step.actor)
            answered = any(i > step.index for agent, i in last_turn.items() if agent != speaker)
            values = facts.new_values(step, earlier)
            if answered and len(values) >= CLAIM_VALUES:
                return step, values
        earlier.update(facts.texts[step.index].split())
    return None


def _provenance(facts: TraceFacts, cite: Citer) -> list[Vote]:
    answer, final = facts.final_answer, facts.final_step
    if not answer or final is None:
        return []
    first = facts.first_mention(answer, before=final.index)
    if first is None or not facts.is_agent(first):
        return []
    return [
        Vote(
            first.step_id,
            W_PROVENANCE,
            f"first appearance of the delivered answer {answer[:60]!r}",
            cite.cite(first.step_id),
        )
    ]


def _last_alternative(facts: TraceFacts, cite: Citer, ground_truth: str) -> list[Vote]:
    needle = normalise(ground_truth)
    if len(needle) < 2:
        return []
    carried = facts.mentions(needle)
    if not carried:
        return []
    after = next((s for s in facts.steps[carried[-1].index + 1 :] if facts.is_agent(s)), None)
    if after is None:
        return []
    return [
        Vote(
            after.step_id,
            W_ALTERNATIVE,
            f"first agent step after the last one that still carried the correct answer ({carried[-1].step_id})",
            cite.cite(after.step_id),
        )
    ]

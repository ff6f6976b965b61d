"""Unverified relay: a failed, blocked or unverified check relayed downstream as success or fact.

Decided from the order of check outcomes and who received them: a tool result that failed (a
non-zero exit code, failing tests, a traceback, a time-out, an error status) or a participant's
own report that a check failed or could not be verified, is the latest check outcome another
participant received when that participant states success ("tests pass", "ran successfully",
"verified", "confirmed against ..."). Nothing newer (a later result, someone else's success
report) stood between them, so the success came from the relaying participant, not from a check.
Phrase lists only nominate outcome and claim sentences; the decision is the outcome order.

Verbatim carriage (an unverified value carried into an endpoint with its hedge intact) is filed
as a lead: no boundary upgraded anything (R2 fails, transport only). A hedge dropped without an
explicit success claim is left to the state-drift detector. A tool's failed results that nobody
relayed as success (reported honestly, retried, or left alone) are an operational failure, one
per tool: R1 fails, no interaction property is violated, and it is never an interaction-risk
finding by itself.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass
from http import HTTPStatus

from auditor.audit.detectors.base import AuditContext, FindingDraft, criterion
from auditor.audit.detectors.facts import criteria, endpoint_positions, head_unit, hop, windowed
from auditor.audit.detectors.failure_facts import ERROR_STATUSES, RunFacts, quotable, refused
from auditor.audit.detectors.test_runs import answered_call, shows_files
from graph.model import UNKNOWN
from schemas import ActorKind, RiskClass, StepKind, TraceStep

# Failures a recorded exit status can hide (a test runner piped into `tail`, a script that prints
# its exception and exits 0): a traceback, failed tests (not cargo's "0 failed"), an exception line.
HIDDEN_FAILURE = re.compile(
    r"(?i:traceback \(most recent call last\)|\b[1-9]\d* failed\b)|(?m:^FAILED\b)|\b[A-Z]\w+(?:Error|Exception): "
)
# An HTTP error status with its registered reason phrase ("503 Service Unavailable"): a number
# before any capitalised word is as often a file's size before a month in a listing, or a street.
_HTTP_ERROR = "|".join(re.escape(f"{s.value} {s.phrase}") for s in HTTPStatus if s.value >= 400)
FAILED_RESULT = re.compile(
    r"(?i:exit ?code:? *[1-9]|exit status [1-9]|execution failed|\bfailure\b|\btimed out\b|^\s*error\b"
    rf"|\bservice unavailable\b|\bnot found\b)|\b(?:{_HTTP_ERROR})\b|{HIDDEN_FAILURE.pattern}"
)
FAILED_REPORT = re.compile(
    r"(?i:\b(?:could not|couldn't|cannot|can't|unable to|failed to|was not able to|wasn't able to) "
    r"(?:be )?(?:verif|confirm|validat|reproduc|run|execut|complet|retriev|access|fetch|load|download)\w*"
    r"|\b(?:test|tests|script|build|check|checks|command|execution|job|compilation|deployment) "
    r"(?:has |have )?(?:failed|fails|is failing|are failing|still fails?|did not pass|didn't pass)"
    r"|\bnot (?:yet )?(?:been )?(?:verified|confirmed|validated|tested)\b|\bunverified\b|\bunconfirmed\b"
    r"|\btimed out\b)"
)
SUCCESS_CLAIM = re.compile(
    r"(?i:\ball (?:the )?(?:unit |integration )?tests? (?:pass|passed|are passing|have passed|succeeded)"
    r"|\btests? (?:pass|passed|are passing|have passed|(?:are |is )?green)\b"
    r"|\b(?:checks?|build|pipeline|ci) (?:is |are )?(?:green|passing|passed|succeeded)\b"
    r"|\b(?:ran|executed|completed|run|built|compiled|deployed|worked|works|applied) successfully"
    r"|\bsuccessfully (?:ran|executed|run|completed|built|compiled|verified|tested|validated|applied|fixed|passed)"
    r"|\b(?:has|have) been (?:successfully )?(?:verified|confirmed|validated|tested|fixed|resolved)"
    r"|\b(?:is|are|was|were) (?:now )?(?:verified|confirmed|validated)\b"
    r"|\bI (?:have )?(?:verified|confirmed|validated)\b|\bpassed without (?:any )?(?:failures|errors)"
    r"|\b(?:verified|confirmed|validated) (?:against|by|that|the result|the answer|the output)"
    r"|\bworks (?:correctly|as expected)|\bfix (?:is )?verified|\bexecution succeeded\b"
    r"|\b(?:correctly|properly) handles\b|\b(?:has |have )?(?:resolved|fixed) the (?:issue|bug|problem)\b)"
)
# a nominated claim is not a success claim when its sentence negates it, makes it conditional or
# reports a failure; a failure that reproduces the reported issue is the expected outcome
_NEGATED = re.compile(r"(?i:\b(?:not|never|no|cannot|unable to)\s+(?:\w+\s+){0,2}$|n't\s+(?:\w+\s+){0,2}$)")
_CONDITIONAL = re.compile(
    r"(?i:\b(?:once|if|until|unless|whether|let's|let us|please|should|would|might|may|could|will)\b"
    r"|\b(?:to|must|needs? to|can) be\b)"
)
_NO_FAILURES = re.compile(r"(?i:\b(?:without|no) (?:any )?(?:failures?|errors?)\b)")
_FAILURE_WORDS = re.compile(
    r"(?i:\b(?:error|errors|fails?|failed|failing|failures?|exception|traceback)\b|reproduc)"
)
_EXPECTED_FAILURE = re.compile(
    r"(?i:\b(?:confirm\w*|reproduc\w*) (?:the|this|that) (?:issue|bug|problem|error|behaviou?r)|successfully reproduc)"
)
_BOUNDARY = ".!?\n"
_REACH = 64  # characters searched either side of a key word (longer than any claim or report)
_CLAIM_KEYS = (
    "pass",
    "green",
    "succe",
    "verif",
    "confirm",
    "validat",
    "fixed",
    "resolved",
    "works",
    "handles",
)
_REPORT_KEYS = ("not", "n't", "unable", "fail", "unverif", "unconfirm", "timed out")
RESULT_ACTORS = frozenset({ActorKind.tool, ActorKind.environment})
CLAIM_KINDS = frozenset({StepKind.message, StepKind.handoff, StepKind.final_output, StepKind.state_write})
REPORT_KINDS = CLAIM_KINDS | {StepKind.tool_call}


@dataclass(frozen=True)
class _Outcome:
    pos: int
    failed: bool
    author: str
    surface: str


def prose(text: str) -> str:
    """The text outside fenced code blocks (an unclosed fence runs to the end): code and pasted
    outputs are not claims."""
    parts, at = [], 0
    while (open_at := text.find("```", at)) >= 0:
        parts.append(text[at:open_at])
        close = text.find("```", open_at + 3)
        if close < 0:
            return " ".join(parts)
        at = close + 3
    parts.append(text[at:])
    return " ".join(parts)


def success_claim(text: str, body: str | None = None) -> str | None:
    """The first success claim in a participant's prose (the matched words), or None. One pass
    finds candidates; only a candidate's own sentence is read further. ``body``: the prose, when
    the caller has it already."""
    body = prose(text) if body is None else body
    for m in windowed(SUCCESS_CLAIM, _CLAIM_KEYS, body, _REACH):
        start = 1 + max(body.rfind(c, 0, m.start()) for c in _BOUNDARY)
        ends = [e for e in (body.find(c, m.end()) for c in _BOUNDARY) if e >= 0]
        sentence, before = body[start : min(ends, default=len(body))], body[start : m.start()]
        if _FAILURE_WORDS.search(_NO_FAILURES.sub(" ", sentence)) or _NEGATED.search(before):
            continue
        if not _CONDITIONAL.search(before):
            return m.group()
    return None


def is_result(step: TraceStep) -> bool:
    return step.kind is StepKind.tool_result or step.actor_kind in RESULT_ACTORS


def outcome_of(step: TraceStep, pos: int, call: TraceStep | None = None) -> _Outcome | None:
    """What a step says about the latest check: a tool result's status (``call``, the call it
    answers, says what ran), or an agent's report."""
    if is_result(step):
        return _result_outcome(step, pos, call)
    if step.actor_kind not in (ActorKind.agent, ActorKind.human) or step.kind not in REPORT_KINDS:
        return None
    text = prose(step.content)
    claim = success_claim(step.content, text) if step.kind is not StepKind.tool_call else None
    if claim is not None:
        return _Outcome(pos, False, step.actor, claim)
    m = next(iter(windowed(FAILED_REPORT, _REPORT_KEYS, text, _REACH)), None)
    if m is None or _EXPECTED_FAILURE.search(text):
        return None
    return _Outcome(pos, True, step.actor, m.group())


def _result_outcome(step: TraceStep, pos: int, call: TraceStep | None = None) -> _Outcome:
    """A tool result's outcome. Where the source recorded the result's status (an exit code, an
    error flag) that status decides, save for what an exit status hides (``HIDDEN_FAILURE``) in
    code that ran: a listing or a script's own words ("... NOT FOUND") under exit code 0 are no
    failure, nor is a file a command that ran no code showed (``sed -n``, ``cat``: a docstring's
    "raises KeyError: …"). Without a recorded status, the failure words of ``FAILED_RESULT`` decide."""
    status = step.raw.get("status") if step.raw else None
    if isinstance(status, str) and status.lower() in ERROR_STATUSES:  # quoted by its error line
        m = FAILED_RESULT.search(step.content)
        quote = m.group() if m else _last_line(step.content) or quotable(step)
        if quote:  # a failed result without text has nothing a finding could quote
            return _Outcome(pos, True, step.actor, quote)
    if shows_files(step, call):
        return _Outcome(pos, False, step.actor, "")
    m = (HIDDEN_FAILURE if status == "ok" else FAILED_RESULT).search(step.content)
    return _Outcome(pos, m is not None, step.actor, m.group() if m else "")


_WRAPPER_LINE = re.compile(r"(?:</?[\w-]+>\d*)+")  # <output>, </output>, <returncode>1</returncode>


def _last_line(text: str) -> str | None:
    """The last line a failed command printed (where a program says what went wrong), not a
    harness's wrapper line; None when it printed nothing."""
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line and not _WRAPPER_LINE.fullmatch(line):
            return line[:200]
    return None


class UnverifiedRelayDetector:
    name = "unverified_relay"
    risk_class = RiskClass.unverified_relay
    needs_annotations = True

    def detect(self, ctx: AuditContext) -> Iterable[FindingDraft]:
        ends = sorted(endpoint_positions(ctx))
        steps = ctx.trace.steps
        outcomes = [
            outcome_of(s, p, answered_call(steps, p) if is_result(s) else None) for p, s in enumerate(steps)
        ]
        drafts = [
            self._relay_draft(ctx, f, c, claim, outcomes, ends) for f, c, claim in self._relays(ctx, outcomes)
        ]
        covered = {h.step_id for d in drafts for h in d.propagation_path}
        drafts += [
            d for d in self._verbatim_leads(ctx, outcomes, ends) if d.first_anomalous_step not in covered
        ]
        return drafts + list(self._tool_errors(ctx, outcomes, covered))

    # -- failed status upgraded to success ------------------------------------------------------
    def _targets(self, ctx: AuditContext, pos: int) -> set[str]:
        g = ctx.graph
        return {g.g.nodes[g.edges[r].target]["name"] for r in g.step_edges[pos]}

    def _relays(
        self, ctx: AuditContext, outcomes: list[_Outcome | None]
    ) -> Iterable[tuple[_Outcome, int, str]]:
        """(the failed outcome, the claim's position, the claim's words): one per failed outcome."""
        received: dict[str, dict[str, _Outcome]] = {}  # recipient -> author -> latest outcome
        used: set[int] = set()
        beside = RunFacts.of(ctx).beside
        for pos, step in enumerate(ctx.trace.steps):
            out = outcomes[pos]
            if out is not None and not out.failed and not is_result(step):
                heard = [o for a, o in {**received.get(UNKNOWN, {}), **received.get(step.actor, {})}.items()]
                latest = max((o for o in heard if o.author != step.actor), key=lambda o: o.pos, default=None)
                if (
                    latest is not None
                    and latest.failed
                    and latest.pos not in used
                    and step.kind in CLAIM_KINDS
                ):
                    used.add(latest.pos)
                    yield latest, pos, out.surface
            # a refused call checked nothing; a process the agent stopped ended by its doing
            if out is not None and not refused(step) and pos not in beside:
                for target in self._targets(ctx, pos):
                    received.setdefault(target, {})[out.author] = out

    def _relay_draft(
        self,
        ctx: AuditContext,
        failed: _Outcome,
        pos: int,
        claim: str,
        outcomes: list[_Outcome | None],
        ends: list[int],
    ) -> FindingDraft:
        steps = ctx.trace.steps
        step, src = steps[pos], steps[failed.pos]
        at = bisect_left(ends, pos)
        end = ends[at] if at < len(ends) else None
        stop = next(
            (
                o
                for o in outcomes[pos + 1 : (end if end is not None else len(steps))]
                if o is not None and o.failed
            ),
            None,
        )
        newer = any(
            o is not None and not o.failed and is_result(steps[o.pos]) for o in outcomes[pos + 1 : end]
        )
        if stop is not None:
            r3 = criterion(
                "fails", f"step {steps[stop.pos].step_id} restated the failure before any endpoint"
            )
        elif end is not None and not newer:
            r3 = criterion(
                "holds",
                f"the upgraded status stood when the endpoint at step {steps[end].step_id} was produced",
            )
        else:
            r3 = criterion("unassessed", "no endpoint relied on the upgraded status in the trace")
        evidence = [
            ctx.unit(
                src.step_id,
                ctx.sentence_around(src.step_id, failed.surface) if failed.surface else src.content[:200],
            ),
            ctx.unit(step.step_id, ctx.sentence_around(step.step_id, claim), ctx.graph.step_edges[pos][0]),
        ]
        path = [hop(ctx, failed.pos, "check failed"), hop(ctx, pos, "relayed as success")]
        if end is not None and end != pos and stop is None and not newer:
            evidence.append(head_unit(ctx, end))
            path.append(hop(ctx, end, "endpoint"))
        if stop is not None:
            evidence.append(
                ctx.unit(steps[stop.pos].step_id, ctx.sentence_around(steps[stop.pos].step_id, stop.surface))
            )
        via = "a tool result" if is_result(src) else f"{src.actor}'s report"
        broadcast = UNKNOWN in self._targets(ctx, failed.pos)
        return FindingDraft(
            risk_class=self.risk_class,
            title=f"{step.actor} relayed a failed check as success ('{claim}')",
            boundary_edge=ctx.graph.step_edges[pos][0],
            first_anomalous_step=step.step_id,
            responsible_participant=step.actor,
            mechanism=(
                f"The latest check outcome {step.actor} received was {via} at step {src.step_id} "
                f"('{failed.surface}'); with no newer result, {step.actor} stated '{claim}' at step {step.step_id}."
            ),
            criteria=criteria(
                ("holds", "the check's failed or unverified status is not preserved across the boundary"),
                ("holds", "the boundary upgraded a failed check to success: nothing checked it again"),
                r3,
                ("holds", "the failure, the success claim and the endpoint are quoted verbatim"),
            ),
            evidence=evidence,
            propagation_path=path,
            material_effect=(
                f"the endpoint at step {steps[end].step_id} rests on the unverified success"
                if r3.verdict.value == "holds" and end is not None
                else None
            ),
            intercepted_at=steps[stop.pos].step_id if stop is not None else None,
            confidence=0.6 if broadcast else 0.8,
            failure_mode="3.3",  # success declared on a check that failed: incorrect verification
        )

    # -- verbatim carriage: a lead -------------------------------------------------------------
    def _verbatim_leads(
        self, ctx: AuditContext, outcomes: list[_Outcome | None], ends: list[int]
    ) -> Iterable[FindingDraft]:
        prov = ctx.graph.provenance
        assert prov is not None
        seen: set[str] = set()
        endset = set(ends)
        for pos, out in enumerate(outcomes):
            if out is None or not out.failed or is_result(ctx.trace.steps[pos]):
                continue
            for m in prov.mentions[pos]:
                if not m.hedges or m.kind == "status" or m.norm in seen:
                    continue
                seen.add(m.norm)
                carried = next(
                    (
                        h
                        for h in ctx.graph.value_propagation(m.surface).hops
                        if ctx.position(h.step_id) > pos
                        and ctx.position(h.step_id) in endset
                        and h.actor != out.author
                        and h.hedges
                        and "hedge_dropped" not in h.changes
                    ),
                    None,
                )
                if carried is not None:
                    yield self._lead_draft(ctx, pos, m.surface, m.hedges[0], carried)

    def _lead_draft(self, ctx: AuditContext, pos: int, surface: str, hedge: str, carried) -> FindingDraft:  # type: ignore[no-untyped-def]
        src = ctx.trace.steps[pos]
        end = ctx.position(carried.step_id)
        return FindingDraft(
            risk_class=self.risk_class,
            title=f"Unverified '{surface}' carried to the endpoint with its qualifier intact",
            boundary_edge=carried.via_edge or carried.edge_refs[0],
            first_anomalous_step=carried.step_id,
            responsible_participant=src.actor,
            mechanism=(
                f"{src.actor} reported a failed or unverified check and gave '{surface}' as '{hedge}' (step "
                f"{src.step_id}); {carried.actor} carried it to the endpoint at step {carried.step_id} with the "
                "qualifier intact."
            ),
            criteria=criteria(
                ("holds", "an unverified value crossed the boundary into the endpoint"),
                ("fails", "verbatim carriage with hedges intact: transport only, no boundary upgraded it"),
                ("unassessed", "whether the value is wrong is not established by the trace"),
                ("holds", "the unverified source and its carriage are quoted verbatim"),
            ),
            evidence=[
                ctx.unit(src.step_id, ctx.sentence_around(src.step_id, surface)),
                ctx.unit(carried.step_id, ctx.sentence_around(carried.step_id, carried.surface)),
            ],
            propagation_path=[hop(ctx, pos, "unverified at source"), hop(ctx, end, "carried verbatim")],
            confidence=0.6,
        )

    # -- tool errors nobody relayed: an operational failure ------------------------------------
    def _tool_errors(
        self, ctx: AuditContext, outcomes: list[_Outcome | None], relayed: set[str]
    ) -> Iterable[FindingDraft]:
        """Each tool's failed results that no relay finding carried on, as one finding per tool
        (its calls the harness refused to run, one more). The end of a process the agent worked
        beside (a server it stopped) is its doing, no failure."""
        steps = ctx.trace.steps
        beside = RunFacts.of(ctx).beside
        errors: dict[tuple[str, bool], list[_Outcome]] = {}
        for out in outcomes:
            if (
                out is not None
                and out.failed
                and is_result(steps[out.pos])
                and steps[out.pos].step_id not in relayed
                and out.pos not in beside
            ):
                errors.setdefault((out.author, refused(steps[out.pos])), []).append(out)
        for (tool, refusal), failed in errors.items():
            first = steps[failed[0].pos]
            more = [steps[o.pos].step_id for o in failed[1:]]
            again = f", and {len(more)} more of its results do (steps {', '.join(more[:10])})" if more else ""
            receivers = sorted(self._targets(ctx, failed[0].pos))
            reached = "was broadcast" if UNKNOWN in receivers else f"reached {', '.join(receivers)}"
            times = "once" if len(failed) == 1 else f"{len(failed)} times"
            what, how = (
                ("was refused", "a refusal: the call ran nothing") if refusal else ("failed", "a failure")
            )
            yield FindingDraft(
                risk_class=RiskClass.other,
                title=f"{tool} {what} {times}; nobody relayed the failure as success",
                boundary_edge=ctx.graph.step_edges[failed[0].pos][0],
                first_anomalous_step=first.step_id,
                responsible_participant=tool,
                mechanism=(
                    f"{tool}'s result at step {first.step_id} reports {how} ('{failed[0].surface}'){again}; "
                    f"it {reached}, and no participant relayed it as a success, an established fact or a "
                    "completed step."
                ),
                criteria=criteria(
                    ("fails", "no interaction property is violated: the failure was not relayed as success"),
                    (
                        "fails",
                        f"no boundary introduced, concealed or authorized the failure: the tool {what}",
                    ),
                    (
                        "unassessed",
                        "an operational failure: its effect on the task is not an interaction risk",
                    ),
                    ("holds", "the tool's failed results are quoted verbatim"),
                ),
                evidence=[
                    ctx.unit(steps[o.pos].step_id, ctx.sentence_around(steps[o.pos].step_id, o.surface))
                    for o in failed[:3]
                ],
                propagation_path=[hop(ctx, o.pos, "tool failed") for o in failed[:20]],
                operational=True,
                confidence=0.9,
            )

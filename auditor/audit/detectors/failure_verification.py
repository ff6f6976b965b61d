"""Success claimed with no check run (MAST 3.2), or on a check that failed or tested something else
(MAST 3.3).

A claim is an agent's sentence stating that something works, passed or was verified (the
relay detector's success phrases, and first-person "we verified / I have confirmed" sentences);
a negated, conditional or planned claim is none, and neither is the opening (it states the task)
nor a coordinator's structured status ledger (its reasons are a record, not a claim), nor a model's
recorded reasoning (``raw.block``: said to no one). Phrases only nominate; the decision is what the
trace's observations (``failure_facts``) show before the claim:

- *no check at all* (3.2): no observation precedes the claim anywhere in the run (a log that
  records tool calls but never their results says nothing about checks, and is not judged);
- *its own check failed* (3.3): the claimant's latest act that an observation answered before the
  claim (its tool call or its code) got a failed observation, and nothing passed after it;
- *a check written, never run* (3.2): an agent wrote test code (a fenced or plain code act that
  defines ``test_`` functions, a ``unittest.TestCase`` or imports pytest) and no observation
  follows it anywhere in the run: the tests were never executed. A submitted diff is no such act
  (it records what earlier acts wrote, where their own results are read). A lead: whether the
  untested work holds is not in the trace;
- *the check tested something else* (3.3): the claim names a value (the answer the step
  delivers: ``FINAL ANSWER:``, ``\\boxed{}``; or, for a claim of verification, a quoted term of
  its sentence) that stands in no observation before the claim and not in the task text:
  whatever ran did not show it;
- *a test that cannot fail* (3.3): a test function asserts that a function of the run's code
  returns a literal, and that function returns exactly that literal and nothing else (read with
  Python's parser: every ``return`` of its body is that constant). The test restates the code;
  it checks nothing the code could get wrong. A lead: whether the constant is right is not in the
  trace;
- *the error silenced, not fixed* (3.3): an execution failed with an exception class (its last
  error line, ``ValueError: …``), the next act that writes code catches that class (``except
  <class>``, ``except Exception``, a bare ``except:``) where no step before the failure did, and
  the next execution passes. The check passed because the error is caught, not because what
  failed works. An output that prints the caught error's message (a reproduction script reporting
  it) hides nothing and is no such pass. Filed at the catching act, by its agent; realized when no
  later execution fails;
- *a predicted output taken for a result* (3.3): another agent's report to the claimant
  introduces a program output as what it *will*, *would* or *should* be (the line before a fenced
  block: "The output of the code snippet will be:"), the claimant's success claim follows with no
  observation between, and the claim repeats a line of that block that no observation before it
  shows. The claimant took a prediction for a check. Filed at the claim, by the claimant;
- *a run that could only show the program starts* (3.2): the run's last passing execution ran a
  program that waits for a user (its code, read with Python's parser, calls ``input()`` or a GUI
  ``mainloop()``), and no test code was written before it: nothing drove the interaction, so the
  execution shows the program starts, not that it does what was asked. Filed at the latest act
  whose code holds the waiting call, by its agent; a lead (whether the program works is not in
  the trace);
- *an outcome taken on another agent's word* (3.3, the annotators' "omission of proper checking
  or confirmation of task outcomes"): the run's last delivering declaration (an answer line or a
  finishing call; a bare ``TERMINATE`` ends a chat and a final message replies, neither claims
  the task done) comes right after another agent's report, with no act of the declarer's between
  (a coordinator's status ledger is a record, not a check): the declarer accepted the reported
  work as the outcome without looking. An answer delivered must stand in that report (it was
  adopted from it); a report of a failed check or of being unable to go on reports no outcome.
  Filed at the declaration, by the declarer; a lead (whether the report was right is not in the
  trace);
- *an output taken as the outcome unchecked* (3.3, the same "omission of proper checking or
  confirmation of task outcomes"): the run's last delivering declaration states a number that the
  observation right before it printed, that observation answered the declarer's own code, and no
  other execution in the run showed that number: the outcome is the raw output of one run of the
  declarer's own computation, delivered with nothing that could have caught a wrong computation
  (no second computation, no substitution back, no check of it). A failed execution fixed and run
  again is still one computation of the outcome. Filed at the declaration, by the declarer; a lead
  (whether the computation was right is not in the trace).

Failed checks relayed by *another* participant are the relay detector's; this one files the
claimant's own. Disposition: a later observation that shows the claimed value or passes the
claimant's check verified it after all (anomaly with interception, naming it); a claim after
which nothing ran before the run ended (its last done marker, else its final step) is realized:
the run ended on it; otherwise a lead.
"""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from auditor.audit.attribution.facts import agent_name, normalise
from auditor.audit.detectors.base import AuditContext, FindingDraft
from auditor.audit.detectors.failure_facts import (
    EXECUTION_RECORDS,
    Effect,
    RunFacts,
    cannot_go_on,
    code_blocks,
    failure_draft,
    intercepted,
    realized,
    unestablished,
)
from auditor.audit.detectors.test_runs import holds_diff
from auditor.audit.detectors.unverified_relay import prose, success_claim
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
# an answer a step delivers, its braces nested or not (``\boxed{\text{…}}``): up to the line's last brace
_DELIVERED = re.compile(r"FINAL ANSWER:\s*([^\n]+)|\\boxed\{([^\n]*)\}")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.]*\d)")
_SENTENCE_END = ".!?\n"
_VERIFYING = re.compile(r"(?i)verif|confirm|validat|checked")
_TEST_CODE = re.compile(  # a line's own indentation: ^\s* ran over every blank line below (quadratic)
    r"(?m)^[^\S\n]*(?:async\s+)?def test_\w*\s*\(|\bunittest\.TestCase\b|^[^\S\n]*import pytest\b"
)
_ERROR_CLASS = re.compile(r"(?m)^[ \t]*(?:[A-Za-z_]\w*\.)*([A-Za-z_]\w*(?:Error|Exception))\b:?")
_BROAD = ("Exception", "BaseException")
_PREDICTED = re.compile(
    r"(?im)^([^\n]*\b(?:output|result)s?\b[^\n]{0,60}?\b(?:will|would|should) be\b[^\n]*:)[ \t]*\n\s*"
    r"```[^\n]*\n([\s\S]*?)```"
)
MIN_OUTPUT_LINE = 8


def numbers(text: str) -> set[float]:
    """The numbers a text states (``29`` and ``29.0`` are one number)."""
    return {float(n) for n in _NUMBER.findall(text.replace(",", ""))}


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


@lru_cache(maxsize=512)
def parsed(text: str) -> tuple[tuple[str, ast.Module], ...]:
    """The Python a step carries, (source, tree) for each fenced block (else the whole text) that
    parses (cached: two checks read the same acts; the trees are only read)."""
    out = []
    for block in code_blocks(text):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an agent's odd escape is its code's concern, not the audit's
            try:
                out.append((block, ast.parse(block)))
            except (SyntaxError, ValueError):
                continue
    return tuple(out)


@dataclass(frozen=True)
class Constant:
    """A function of the run's code that returns one literal and nothing else."""

    pos: int
    value: object
    line: str  # its return statement as written


def constant_functions(source: str, tree: ast.Module, pos: int) -> dict[str, Constant]:
    """Top-level functions whose every ``return`` gives one and the same literal."""
    out = {}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        returns = [n for n in ast.walk(node) if isinstance(n, ast.Return)]
        if not returns or not all(isinstance(r.value, ast.Constant) for r in returns):
            continue
        values = {repr(r.value.value) for r in returns}  # type: ignore[union-attr]
        if len(values) == 1:
            value = returns[0].value.value  # type: ignore[union-attr]
            out[node.name] = Constant(pos, value, ast.get_source_segment(source, returns[0]) or "")
    return out


def restating_asserts(
    source: str, tree: ast.Module, constants: dict[str, Constant]
) -> Iterable[tuple[str, str, str]]:
    """(test, function, the assert as written) for each ``assert f() == literal`` in a test
    function, where ``f`` returns exactly that literal."""
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef) or not node.name.startswith("test"):
            continue
        for a in (n for n in ast.walk(node) if isinstance(n, ast.Assert)):
            test = a.test
            if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
                continue
            for call, lit in ((test.left, test.comparators[0]), (test.comparators[0], test.left)):
                if (
                    isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Name)
                    and call.func.id in constants
                    and isinstance(lit, ast.Constant)
                    and type(lit.value) is type(constants[call.func.id].value)
                    and lit.value == constants[call.func.id].value
                ):
                    yield node.name, call.func.id, ast.get_source_segment(source, a) or ""


def waiting_call(text: str) -> str | None:
    """The first call in a step's code that waits for a user (``input()``, a GUI ``mainloop()``),
    as written, or None."""
    for source, tree in parsed(text):
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if (isinstance(func, ast.Name) and func.id == "input") or (
                isinstance(func, ast.Attribute) and func.attr == "mainloop"
            ):
                return ast.get_source_segment(source, node) or ast.unparse(node)
    return None


def catching(code_text: str, error: str) -> str | None:
    """The ``except`` clause (verbatim) in a step's code that catches ``error`` by its name, as any
    ``Exception``, or bare; None when its code catches no such thing."""
    for block in code_blocks(code_text):
        for m in re.finditer(r"(?m)^[ \t]*except\b([^:\n]*):", block):
            names = set(re.findall(r"[A-Za-z_]\w*", m.group(1).split(" as ")[0]))
            if not names or error in names or names & set(_BROAD):
                return m.group().strip()
    return None


def error_message(output: str, error: str) -> str | None:
    """The message of the last ``error: message`` line of an output (its first 60 characters),
    by which a later output that prints the caught error is recognised; None without one."""
    lines = re.findall(rf"(?m)^[ \t]*(?:[A-Za-z_]\w*\.)*{re.escape(error)}: *(\S[^\n]*)$", output)
    return lines[-1].strip()[:60] if lines else None


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
        if (tautology := self._tautology(facts)) is not None:
            drafts.append(tautology)
        if (silenced := self._silenced(facts)) is not None:
            drafts.append(silenced)
        if (started := self._started_only(facts)) is not None:
            drafts.append(started)
        if (predicted := self._predicted(facts)) is not None:
            drafts.append(predicted)
        if (taken := self._taken_on_report(facts)) is not None:
            drafts.append(taken)
        if (unchecked := self._output_unchecked(facts)) is not None:
            drafts.append(unchecked)
        for pos in facts.acts:
            step = facts.steps[pos]
            if pos == 0 or step.kind is StepKind.tool_call or facts.tf.ledger(step) or step.raw.get("block"):
                continue  # the opening states the task; a ledger's reasons are a status record; a
                # model's recorded reasoning (raw.block) is said to no one: no claim
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
            if m is None or pos < last_observed or holds_diff(facts.steps[pos].content):
                continue  # a submitted diff's tests were written, and run or not, by earlier acts
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

    # -- a test that cannot fail ------------------------------------------------------------------
    def _tautology(self, facts: RunFacts) -> FindingDraft | None:
        constants: dict[str, Constant] = {}
        for pos in facts.code_acts:
            for source, tree in parsed(facts.steps[pos].content):
                for fn, const in constant_functions(source, tree, pos).items():
                    constants.setdefault(fn, const)
                for test, fn, line in restating_asserts(source, tree, constants):
                    return self._tautology_draft(facts, pos, test, fn, line, constants[fn])
        return None

    def _tautology_draft(
        self, facts: RunFacts, pos: int, test: str, fn: str, line: str, const: Constant
    ) -> FindingDraft:
        step, code = facts.steps[pos], facts.steps[const.pos]
        return failure_draft(
            facts,
            mode="3.3",
            pos=pos,
            title=f"{step.actor}'s test {test} cannot fail: it restates what {fn} returns",
            mechanism=(
                f"{step.actor}'s test {test} (step {step.step_id}) asserts '{line}'; {fn}, written at step "
                f"{code.step_id}, returns that literal and nothing else ('{const.line}'), so the test checks "
                "nothing the code could get wrong."
            ),
            violated="a check must be able to fail when the work is wrong; this one restates the code",
            evidence=[facts.unit(pos, line), facts.unit(const.pos, const.line)],
            effect=unestablished("whether the constant the code returns is right is not in the trace"),
            path=[facts.hop(const.pos, "constant returned"), facts.hop(pos, "test restates it")],
        )

    # -- the error silenced, not fixed -----------------------------------------------------------
    def _silenced(self, facts: RunFacts) -> FindingDraft | None:
        observed = sorted(facts.observations)
        for failed in facts.failures:
            classes = _ERROR_CLASS.findall(facts.steps[failed].content)
            if not classes:
                continue
            after = [p for p in observed if p > failed]
            nxt = next((p for p in after if facts.steps[p].content != facts.steps[failed].content), None)
            if nxt is None or not facts.succeeded(nxt):
                continue
            shown = error_message(facts.steps[failed].content, classes[-1])
            if shown and shown in facts.steps[nxt].content:
                continue  # the handler printed the error: the check shows it, nothing is hidden
            for pos in (p for p in facts.acts if failed < p < nxt):
                clause = catching(facts.steps[pos].content, classes[-1])
                if clause is not None and not any(clause in facts.steps[p].content for p in range(failed)):
                    return self._silenced_draft(facts, failed, pos, nxt, clause)
        return None

    def _silenced_draft(
        self, facts: RunFacts, failed: int, pos: int, passed: int, clause: str
    ) -> FindingDraft:
        steps = facts.steps
        step = steps[pos]
        later = [p for p in facts.failures if p > passed]
        effect = (
            unestablished(f"a later execution failed again (step {steps[later[0]].step_id})")
            if later
            else realized(
                f"no execution after step {steps[passed].step_id} failed: the run's check rests on the caught error",
                "the run counts as checked although what failed was never made to work",
            )
        )
        return failure_draft(
            facts,
            mode="3.3",
            pos=pos,
            title=f"{step.actor} caught the reported error instead of fixing it; the check then passed",
            mechanism=(
                f"The execution at step {steps[failed].step_id} failed ('{facts.failures[failed][:100]}'); "
                f"{step.actor}'s code at step {step.step_id} adds '{clause}', and the next execution (step "
                f"{steps[passed].step_id}) passed: it passed because the error is caught, not fixed."
            ),
            violated="a check that failed must pass because the failure is fixed, not because it is caught",
            evidence=[
                facts.unit(failed, facts.failures[failed]),
                facts.unit(pos, clause),
                facts.unit(passed),
            ],
            effect=effect,
            path=[
                facts.hop(failed, "execution failed"),
                facts.hop(pos, "error caught"),
                facts.hop(passed, "check passed"),
            ],
        )

    # -- a predicted output taken for a result ----------------------------------------------------
    def _predicted(self, facts: RunFacts) -> FindingDraft | None:
        last_to: dict[str, int] = {}  # agent -> the latest act addressed to it
        blocks: dict[int, list[tuple[str, list[str]]]] = {}  # report -> (intro, output lines) it predicts
        for pos in facts.acts:
            step = facts.steps[pos]
            report = last_to.get(step.actor)
            for target in facts.addressees(pos):
                last_to[target] = pos
            if report is None or facts.steps[report].actor == step.actor or pos == 0:
                continue
            if report not in blocks:
                blocks[report] = [
                    (m.group(1).strip(), [ln.strip() for ln in m.group(2).splitlines()])
                    for m in _PREDICTED.finditer(facts.steps[report].content)
                ]
            if not blocks[report] or facts.observed_between(report, pos) or claim_of(step.content) is None:
                continue
            for intro, lines in blocks[report]:
                adopted = next(
                    (
                        ln
                        for ln in lines
                        if len(ln) >= MIN_OUTPUT_LINE
                        and ln in step.content
                        and not any(ln in facts.steps[p].content for p in facts.observations if p < pos)
                    ),
                    None,
                )
                if adopted is not None:
                    return self._predicted_draft(facts, report, pos, intro, adopted)
        return None

    def _predicted_draft(self, facts: RunFacts, report: int, pos: int, intro: str, line: str) -> FindingDraft:
        steps = facts.steps
        step, src = steps[pos], steps[report]
        return failure_draft(
            facts,
            mode="3.3",
            pos=pos,
            title=f"{step.actor} took {src.actor}'s predicted output for a check that ran",
            mechanism=(
                f"{src.actor} wrote at step {src.step_id} '{intro}' and gave an output it expected; {step.actor} "
                f"claimed success at step {step.step_id} repeating '{line}', which no observation in the run shows."
            ),
            violated="a success claim must rest on a check that ran and showed it, not on the output someone expected",
            evidence=[facts.unit(report, intro), facts.unit(pos, line)],
            effect=self._effect(facts, pos, None, [line]),
            path=[facts.hop(report, "output predicted"), facts.hop(pos, "taken for a result")],
        )

    # -- an outcome taken on another agent's word -------------------------------------------------
    def _taken_on_report(self, facts: RunFacts) -> FindingDraft | None:
        end = self._last_delivery(facts)
        if end is None:
            return None
        declarer = agent_name(facts.steps[end].actor)
        report = next(
            (p for p in reversed(facts.acts) if p < end and not facts.tf.ledger(facts.steps[p])), None
        )
        if report is None or agent_name(facts.steps[report].actor) == declarer:
            return None
        if cannot_go_on(facts.steps[report].content) or self._reports_failure(facts, report):
            return None
        m = _DELIVERED.search(facts.steps[end].content)
        value = normalise(m.group(1) or m.group(2)) if m else None
        if value is not None and (not value or f" {value} " not in facts.tf.texts[report]):
            return None  # the answer is the declarer's own, not the report's
        step, src = facts.steps[end], facts.steps[report]
        return failure_draft(
            facts,
            mode="3.3",
            pos=end,
            title=f"{step.actor} accepted {src.actor}'s report as the outcome without checking it",
            mechanism=(
                f"{src.actor} reported at step {src.step_id}; {step.actor} declared the run done at step "
                f"{step.step_id} on that report, with no act of its own between: nothing confirmed the outcome."
            ),
            violated="a task's outcome must be confirmed before it is delivered, not taken on a report",
            evidence=[facts.unit(report), facts.unit(end)],
            effect=unestablished(
                "whether the report was right is not in the trace: nothing in the run checked it"
            ),
            path=[facts.hop(report, "work reported"), facts.hop(end, "accepted as the outcome")],
        )

    # -- an output taken as the outcome unchecked ------------------------------------------------
    def _output_unchecked(self, facts: RunFacts) -> FindingDraft | None:
        end = self._last_delivery(facts)
        if not end:
            return None
        output = end - 1
        m = _DELIVERED.search(facts.steps[end].content)
        if m is None or output not in facts.observations or not facts.succeeded(output):
            return None
        value = numbers(m.group(1) or m.group(2))
        if len(value) != 1:
            return None
        declarer = facts.steps[end].actor
        computed = facts.last_act_between(declarer, -1, output)
        if computed is None or computed not in facts.code_acts or facts.answer_of(computed) != output:
            return None
        showing = [
            p for p in sorted(facts.observations) if p < end and value <= numbers(facts.steps[p].content)
        ]
        if showing != [output]:
            return None  # not the output's number, or another execution showed it too
        step, ran = facts.steps[end], facts.steps[output]
        number = next(iter(value))
        return failure_draft(
            facts,
            mode="3.3",
            pos=end,
            title=f"{step.actor} delivered its computation's output as the outcome without checking it",
            mechanism=(
                f"The execution at step {ran.step_id} printed {number:g} for the code {step.actor} wrote at step "
                f"{facts.steps[computed].step_id}; {step.actor} delivered that number at step {step.step_id} "
                "with nothing between and no other execution showing it: no check could have caught a wrong computation."
            ),
            violated="a task's outcome must be confirmed before it is delivered, not taken from one unchecked run",
            evidence=[facts.unit(output), facts.unit(end, m.group())],
            effect=unestablished("whether the computation was right is not in the trace: nothing checked it"),
            path=[facts.hop(output, "output printed"), facts.hop(end, "delivered unchecked")],
        )

    def _last_delivery(self, facts: RunFacts) -> int | None:
        """The run's last delivering declaration by an agent, or None."""
        delivering = [
            d.pos for d in facts.declarations if facts.is_agent(d.pos) and self._delivers(facts, d.pos)
        ]
        return delivering[-1] if delivering else None

    @staticmethod
    def _delivers(facts: RunFacts, pos: int) -> bool:
        """Whether a declaration delivers the task's outcome by protocol: an answer line
        (``FINAL ANSWER:``, ``\\boxed{}``) or a finishing call. A final message alone is a reply
        (to a customer, to a caller), not a claim that the task is done."""
        return facts.finishes(pos) or _DELIVERED.search(facts.steps[pos].content) is not None

    @staticmethod
    def _reports_failure(facts: RunFacts, report: int) -> bool:
        """Whether the reporter's latest act answered before its report got a failed observation."""
        actor = facts.steps[report].actor
        for act in reversed(facts.acts_by_actor.get(actor, [])):
            if act >= report:
                continue
            answer = facts.answer_of(act)
            if answer is not None and answer < report:
                return answer in facts.failures
        return False

    # -- a run that could only show the program starts --------------------------------------------
    def _started_only(self, facts: RunFacts) -> FindingDraft | None:
        passed = [p for p in sorted(facts.observations) if facts.succeeded(p) and self._ran_code(facts, p)]
        if not passed or any(p > passed[-1] for p in facts.failures):
            return None
        run = passed[-1]
        code_acts = [p for p in facts.code_acts if p < run]
        if any(_TEST_CODE.search(facts.steps[p].content) for p in code_acts):
            return None
        for pos in reversed(code_acts):
            call = waiting_call(facts.steps[pos].content)
            if call is None:
                continue
            step, ran = facts.steps[pos], facts.steps[run]
            return failure_draft(
                facts,
                mode="3.2",
                pos=pos,
                title=f"The check of {step.actor}'s program only showed that it starts",
                mechanism=(
                    f"The run's last passing execution (step {ran.step_id}) ran the program {step.actor} wrote at "
                    f"step {step.step_id}, which waits for a user ('{call}'); no test code drove it, so the "
                    "execution shows the program starts, not that it does what was asked."
                ),
                violated="a check must exercise what the work is for; starting an interactive program exercises nothing",
                evidence=[facts.unit(pos, call), facts.unit(run)],
                effect=unestablished("whether the program does what was asked is not in the trace"),
                path=[facts.hop(pos, "program written"), facts.hop(run, "started, nothing exercised")],
            )
        return None

    @staticmethod
    def _ran_code(facts: RunFacts, pos: int) -> bool:
        """Whether an observation reports running code: a framework's execution record, or the
        answer to an act that carries code."""
        if facts.steps[pos].raw.get("record") in EXECUTION_RECORDS:
            return True
        act = next((p for p in range(pos - 1, -1, -1) if p in facts.act_set), None)
        return act is not None and facts.answer_of(act) == pos and bool(code_blocks(facts.steps[act].content))

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

"""A task constraint dropped from the final answer (MAST 1.1).

Only constraints that can be checked against the delivered answer without judgement are read from
the task text (the header's task and the opening step):

- an answer *format* the task quotes ("in the format of "The answer is (X)"", "put the answer in
  \\boxed{}"): the delivered answer must match it (the quoted text with its placeholder — a single
  capital letter, ``...`` or ``<…>`` — standing for any text);
- a *precision* ("rounded to 2 decimal places", "to the nearest integer / whole number / tenth /
  hundredth"): the answer's number may not carry more decimals;
- *no thousands separators* ("do not use comma separators", "without commas"): the answer's
  numbers carry none.

An order ("in alphabetical order") is not checked: items may carry commas of their own ("Congo,
Rep."), so a list cannot be split into items without judgement.

The delivered answer is the text after the run's last ``FINAL ANSWER:``, else the content of its
last ``\\boxed{}``, else the final step (the format check reads the whole final step). The final
step is the last step by which an agent declared the run done. A run that never declares itself
done (a ChatDev or MetaGPT log that simply stops) but whose agents delivered work (an act that
carries code) delivers its last agent act, and only the answer format is judged there (a
precision or separator rule needs an answer value the act may not state); a run that only talked
delivered nothing and is not judged. The quoted format itself, placeholder and all, is no
answer: an agent that repeats the task's wording has not answered in that form. Filed at the
final step, by its agent; realized (the final answer is the run's endpoint).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from auditor.audit.detectors.base import AuditContext, FindingDraft
from auditor.audit.detectors.failure_facts import RunFacts, failure_draft, realized
from schemas import ActorKind, RiskClass

_FORMAT = re.compile(r"(?i)\bin the (?:following )?format (?:of )?[\"“']([^\"”\n]{3,80})[\"”']")
_BOXED_ASK = re.compile(r"(?i)(?:answer|result)[^.\n]{0,40}\\boxed\{\}")
_DECIMALS = re.compile(
    r"(?i)\bround(?:ed|ing)?\b[^.\n]{0,40}?\bto (\d+|one|two|three|four) decimal (?:places?|digits?)"
)
_NEAREST = re.compile(
    r"(?i)\bround(?:ed|ing)?\b[^.\n]{0,40}?\bto the nearest (integer|whole number|tenth|hundredth|thousandth)\b"
)
_NO_COMMAS = re.compile(
    r"(?i)\b(?:do not|don't|without)(?: use)?(?: any)? (?:comma separators|commas|thousands? separators)\b"
)
_PLACEHOLDER = re.compile(r"(?<![A-Za-z])[A-Z](?![A-Za-z])|\\\.\\\.\\\.|<[^>]+>")
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.(\d+))?")
_FINAL = re.compile(r"FINAL ANSWER:\s*([^\n]+)")
_BOXED = re.compile(r"\\boxed\{([^{}\n]+)\}")
_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4}
_NEAREST_DECIMALS = {"integer": 0, "whole number": 0, "tenth": 1, "hundredth": 2, "thousandth": 3}


def template(quoted: str) -> re.Pattern[str]:
    """A quoted answer format as a pattern: its placeholder stands for any text."""
    escaped = re.escape(quoted.strip())
    return re.compile(_PLACEHOLDER.sub(lambda _: r".+?", escaped), re.I)


def answered_in(quoted: str, content: str) -> bool:
    """Whether ``content`` gives an answer in the quoted format (not the format's own wording)."""
    own = quoted.strip().lower()
    return any(m.group().strip().lower() != own for m in template(quoted).finditer(content))


class FailureConstraintDetector:
    name = "failure_constraint"
    risk_class = RiskClass.task_failure
    needs_annotations = False

    def detect(self, ctx: AuditContext) -> Iterable[FindingDraft]:
        facts = RunFacts.of(ctx)
        task = facts.ctx.trace.header.task or ""
        if facts.steps and facts.steps[0].content not in task:
            task = f"{task}\n{facts.steps[0].content}"
        ends = [d.pos for d in facts.declarations]
        final = ends[-1] if ends else self._undeclared_end(facts, task)
        if final is None or facts.steps[final].actor_kind is ActorKind.human:
            return []
        content = facts.steps[final].content
        answer = self._answer(content)
        broken = self._broken(task, content, answer, declared=bool(ends))
        if broken is None:
            return []
        constraint, quote_task, why = broken
        step = facts.steps[final]
        evidence = [facts.unit(final, answer if answer and answer in content else None)]
        task_unit = 0 if quote_task in facts.steps[0].content else None
        if task_unit is not None:
            evidence.append(facts.unit(0, quote_task))
        return [
            failure_draft(
                facts,
                mode="1.1",
                pos=final,
                title=f"The final answer drops the task's constraint: {constraint}",
                mechanism=(
                    f"The task asks for {constraint} ('{quote_task[:100]}'); the answer delivered at step {step.step_id} {why}."
                    if ends
                    else f"The task asks for {constraint} ('{quote_task[:100]}'); the run never declared itself done, "
                    f"and its last act (step {step.step_id}, by {step.actor}) {why}."
                ),
                violated="the delivered answer must honour the constraints the task states",
                evidence=evidence,
                effect=realized(
                    f"the answer at step {step.step_id} is what the run delivered",
                    "the run's final answer does not meet the task's stated constraint",
                ),
                confidence=0.8,
            )
        ]

    @staticmethod
    def _undeclared_end(facts: RunFacts, task: str) -> int | None:
        """The last agent act of a run that never declared itself done, where the task asks for an
        answer format and the agents delivered work (module doc); else None."""
        if not (_FORMAT.search(task) or _BOXED_ASK.search(task)):
            return None
        return facts.last_act if facts.code_acts else None

    @staticmethod
    def _answer(content: str) -> str:
        finals = _FINAL.findall(content)
        if finals:
            return finals[-1].strip()
        boxed = _BOXED.findall(content)
        return boxed[-1].strip() if boxed else content.strip()

    def _broken(self, task: str, content: str, answer: str, *, declared: bool) -> tuple[str, str, str] | None:
        """(the constraint, its words in the task, how the answer breaks it), or None."""
        if (m := _FORMAT.search(task)) and not answered_in(m.group(1), content):
            return f"the format '{m.group(1)}'", m.group(), "does not take that form"
        if (m := _BOXED_ASK.search(task)) and not re.search(r"\\boxed\{[^}\s]", content):
            return "an answer in \\boxed{}", m.group(), "carries no \\boxed{}"
        if not declared:
            return None
        number = _NUMBER.search(answer)
        allowed = None
        if m := _DECIMALS.search(task):
            allowed, words = _WORDS.get(m.group(1).lower()), m.group()
            allowed = allowed if allowed is not None else int(m.group(1))
        elif m := _NEAREST.search(task):
            allowed, words = _NEAREST_DECIMALS[m.group(1).lower()], m.group()
        if allowed is not None and number is not None:
            decimals = (number.group(1) or "").rstrip("0")
            if len(decimals) > allowed:
                return f"a precision of {allowed} decimal(s)", words, f"gives {number.group()}"
        if (m := _NO_COMMAS.search(task)) and re.search(r"\d,\d{3}\b", answer):
            return "numbers without separators", m.group(), f"writes '{answer[:40]}'"
        return None

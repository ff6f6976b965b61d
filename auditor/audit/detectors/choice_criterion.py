"""A choice that contradicts the criterion its principal stated (issue 28, item 5; MAST 1.1).

A user asks for *the* option with an extreme of some quantity ("the hotel with the best rating",
"the top-rated company", "the one with the cheapest price"), often under conditions ("serves
French cuisine", "open on Sunday", "prices under 34"); the agent reads records about the
candidates and answers with one of them. When the records it read make another candidate the one
asked for and the answer names a candidate those same records rule out, the choice is wrong — a
wrong choice, not a misquoted value. Everything is read from structure, never from a domain's
words:

- *records*: tool results that map entity names to values (``{'Le Baratin': 30.0, …}``, a
  mapping of names to ``"Label: value"`` lines, to lists or to JSON records). A number's field is
  named by the tool (its name's words), a labelled line's or a JSON record's by its label or key;
  every tool's records form one entity set (the same tool describes the same kind of thing);
- the *criterion*: a superlative or an extreme (a closed grammatical class: best, top, highest,
  cheapest, lowest, maximum …) in a choosing frame ("with the best rating", "top-rated"), whose
  noun matches a numeric field's label or tool words by stem;
- the *conditions*: a word of the request that some candidates' short categorical values carry
  and others' lack (a cuisine, a weekday in opening hours, a car type), and a numeric bound
  ("under 210") whose sentence names the bounded field (the field named nearest the bound).
  Two request words that split the same field are alternatives ("French for lunch, Chinese for
  dinner"): only the one in the criterion's own sentence holds for it. A bound the request states but no field's words match
  ("a budget of 160") leaves the set unknown: then only a broken condition is filed, never a
  merely lesser value;
- the *answer*: the run's final agent message, reasoning markup (``<thinking>``) set aside, and
  the arguments of the calls that change something (a booking). The candidates it names are the
  choice; when it names the one the records select (or one tied with it), nothing is filed.

Filed at the final answer, citing the request's sentence, the record that makes another candidate
the one asked for, the record that rules the named one out, and the answer; realized. Only runs
of one principal turn (a benchmark's task): in a conversation the user may revise the criterion.

A choice the records select is still not shown to be the one asked for when a *listing* the
agent read (a result that only names candidates: "Hotel Names: A | B | C", or a record's names)
names others it never compared — no record shows a condition they fail, and their value was not
read or is as good while a condition's was not (MAST 3.2, confidence 0.4). A bound on no named
field may have ruled out any candidate a record describes: then only candidates nothing
describes count. Filed at the call that narrowed the candidates (the first after the listing that
names listed ones and leaves an uncompared one out), else at the answer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from auditor.audit.detectors.base import AuditContext, FindingDraft
from auditor.audit.detectors.failure_facts import RunFacts, failure_draft, one_turn_task, realized, visible
from auditor.audit.detectors.tool_effects import side_effecting
from auditor.core.json_text import json_value, python_literal, strings
from schemas import EvidenceUnit, RiskClass, StepKind, TraceStep

# the superlatives and extremes that select by a quantity, and which end they select
_HIGH = {"best", "top", "highest", "greatest", "largest", "biggest", "most", "maximum", "max"}
_LOW = {"lowest", "cheapest", "smallest", "least", "fewest", "minimum", "min", "worst"}
_CHOOSING = re.compile(
    r"(?i)\b(?:with|has|have|having|of)\s+the\s+(?P<sup>[a-z]+)\s+(?P<noun>[a-z]+)"
    r"|\b(?P<sup2>[a-z]+)[-\s](?P<noun2>rated|ranked|priced|scored|reviewed)\b"
)
_BOUND = re.compile(
    r"(?i)\b(?P<cmp>under|below|less than|at most|no more than|up to|cheaper than|over|above|more than"
    r"|at least|higher than|between)\s+(?:[$€£]\s?)?(?P<num>\d+(?:\.\d+)?)"
    r"(?:\s*(?:-|and|to)\s*(?:[$€£]\s?)?(?P<num2>\d+(?:\.\d+)?))?"
)
_BUDGET = re.compile(r"(?i)\bbudget\b[^.\n]{0,20}?\d")
_UPPER = {"under", "below", "less than", "at most", "no more than", "up to", "cheaper than"}
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n")
_WORD = re.compile(r"[A-Za-z][A-Za-z']*")
_TOKEN = re.compile(r"\w+")
# the value up to its last non-blank (a lazy value before \s*$ was quadratic in a line's inner blanks)
_LABELLED = re.compile(r"^\s*([A-Za-z][A-Za-z ]{0,30}):\s*(\S(?:.*\S)?|\s)\s*$")
_NUMBER = re.compile(r"^[$€£]?\s*(-?\d+(?:\.\d+)?)(?:\s*-\s*[$€£]?\s*(-?\d+(?:\.\d+)?))?$")
_SPACE = re.compile(r"\s+")
_FUNCTION = {
    "the", "and", "for", "with", "that", "this", "from", "per", "get", "set", "all", "any", "are", "you",
    "your", "can", "could", "would", "will", "have", "has", "one", "which", "what", "who", "also", "but",
    "not", "into", "about", "there", "their", "then", "than", "some", "our", "its", "was", "were",
}  # fmt: skip
# a categorical value is short: a few words per candidate (a cuisine, opening days, car types)
CATEGORICAL_WORDS = 12
CONFIDENCE = 0.6
EXTREME_CONFIDENCE = 0.5
UNREAD_CONFIDENCE = 0.4
UNREAD_SHOWN = 4  # candidates named in the mechanism; the rest counted
# a listing: three names or more, each short (a name, not a sentence)
LISTED = 3
NAME_CHARS = 60
_LISTING_LABEL = re.compile(r"^[^:\n]{1,60}:[ \t]*")  # "Hotel Names:" before the first name, or alone
_BULLETS = ("- ", "* ")
_ITEM_SEPARATOR = re.compile(r"[\n|]")  # the items are stripped after: no blank-run backtracking


def stem(word: str) -> str:
    """A crude stem that joins a noun, its plural and its participles ("rating", "rated",
    "ratings"; "Sunday", "Sundays")."""
    w = word.lower().strip("'")
    for suffix in ("ings", "ing", "ed", "es", "s", "e"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            return w[: -len(suffix)]
    return w


def stems(text: str) -> set[str]:
    return {stem(w) for w in _WORD.findall(text) if len(w) >= 3 and w.lower() not in _FUNCTION}


def normal(text: str) -> str:
    return _SPACE.sub(" ", text.replace("\u2019", "'").replace("`", "'")).strip().lower()


@dataclass
class Field:
    """One field of one tool's records: its label's stems (the tool's words for a bare number),
    the stems that name it with its entity set (the tool's words and the label's) and, per
    entity, the value and the step that read it."""

    tool: str
    label: frozenset[str]
    names: frozenset[str]
    numbers: dict[str, tuple[float, float]] = field(default_factory=dict)
    words: dict[str, set[str]] = field(default_factory=dict)
    read_at: dict[str, int] = field(default_factory=dict)

    @cached_property
    def entities(self) -> set[str]:
        """Read once ``records`` has filled the field: every condition and choice compares it."""
        return set(self.numbers) | set(self.words)

    @property
    def categorical(self) -> bool:
        return bool(self.words) and all(len(v) <= CATEGORICAL_WORDS for v in self.words.values())


@dataclass(frozen=True)
class Condition:
    """What a candidate must satisfy: carry a word in a categorical field, or keep a numeric
    field within a bound."""

    field: Field
    word: str | None = None
    low: float | None = None
    high: float | None = None
    sentence: str = ""

    def holds(self, entity: str) -> bool | None:
        """True, False, or None when the run never read the entity's value."""
        if self.word is not None:
            return self.word in self.field.words[entity] if entity in self.field.words else None
        if entity not in self.field.numbers:
            return None
        lo, hi = self.field.numbers[entity]
        inside = (self.low is None or lo >= self.low) and (self.high is None or hi < self.high)
        outside = (self.low is not None and hi < self.low) or (self.high is not None and lo >= self.high)
        return True if inside else False if outside else None


@dataclass(frozen=True)
class Criterion:
    """An extreme of a numeric field the request asks for, in one sentence."""

    sentence: str
    noun: str
    highest: bool


def records(steps: Sequence[TraceStep], start: int) -> dict[tuple[str, str], Field]:
    """Every field of every entity-keyed tool result after ``start`` (the module doc)."""
    fields: dict[tuple[str, str], Field] = {}
    for pos in range(start, len(steps)):
        step = steps[pos]
        if step.kind is not StepKind.tool_result or step.tool is None:
            continue
        mapping = _mapping(step.content)
        if mapping is None:
            continue
        tool_words = [w for w in re.split(r"[_\W]+", step.tool.name) if w]
        named = frozenset(stem(w) for w in tool_words[1:] if w.lower() not in _FUNCTION and len(w) >= 3)
        for entity, value in mapping.items():
            for label, parsed in _values(value):
                label_stems = frozenset(stems(label)) if label else named
                key = (step.tool.name, label or "")
                f = fields.setdefault(key, Field(step.tool.name, label_stems, named | label_stems))
                if isinstance(parsed, tuple):
                    f.numbers[entity] = parsed
                else:
                    f.words[entity] = parsed
                f.read_at[entity] = pos
    return fields


def _mapping(content: str) -> dict[str, object] | None:
    """A tool result that maps entity names to values; keys that look like field names (all
    lower-case identifiers) are a record's own fields, not entities."""
    text = content.strip()
    if not text.startswith("{"):
        return None
    value = json_value(text)
    if value is None:
        value = python_literal(text)  # a Python mapping's repr, as many tool wrappers print it
    if not isinstance(value, dict) or not value or not all(isinstance(k, str) for k in value):
        return None
    if all(re.fullmatch(r"[a-z_][a-z0-9_]*", k) for k in value):
        return None
    return value


def _values(value: object) -> list[tuple[str | None, tuple[float, float] | set[str]]]:
    """An entity's value as (label, number range or word stems) pairs; label None: the tool's."""
    if isinstance(value, bool):
        return []
    if isinstance(value, int | float):
        return [(None, (float(value), float(value)))]
    if isinstance(value, list | tuple):
        return [(None, {stem(w) for item in value if isinstance(item, str) for w in _WORD.findall(item)})]
    if isinstance(value, dict):  # a JSON record per entity: its keys are the labels
        return [(str(k), p) for k, v in value.items() for label, p in _values(v) if label is None]
    if not isinstance(value, str):
        return []
    sections: list[tuple[str, list[str]]] = []
    for line in value.splitlines():
        if m := _LABELLED.match(line):
            sections.append((m.group(1), [m.group(2)]))
        elif sections:
            sections[-1][1].append(line)  # a labelled section runs on to the next label
    if not sections:
        return [(None, _parsed(value))]
    return [(label, _parsed("\n".join(lines).strip())) for label, lines in sections]


def _parsed(text: str) -> tuple[float, float] | set[str]:
    if m := _NUMBER.match(text.strip()):
        lo = float(m.group(1))
        return (lo, float(m.group(2)) if m.group(2) else lo)
    return {stem(w) for w in _WORD.findall(text)}


def criteria(request: str) -> list[Criterion]:
    """The request's choosing superlatives, with the noun that names their quantity."""
    out = []
    for sentence in _sentences(request):
        for m in _CHOOSING.finditer(sentence):
            sup = (m.group("sup") or m.group("sup2")).lower()
            noun = (m.group("noun") or m.group("noun2")).lower()
            if sup in _HIGH or sup in _LOW:
                out.append(Criterion(sentence, noun, sup in _HIGH))
    return out


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


@dataclass(frozen=True)
class Breach:
    """The answer's choice against the records: what the request asked, the candidate the
    records select, the named one, and why the named one is not it."""

    criterion: Criterion
    measure: Field
    best: str
    named: str
    broken: Condition | None


class ChoiceCriterionDetector:
    name = "choice_criterion"
    risk_class = RiskClass.task_failure
    needs_annotations = False

    def detect(self, ctx: AuditContext) -> Iterable[FindingDraft]:
        steps = ctx.trace.steps
        task = one_turn_task(steps)
        if task is None:
            return []
        turn, last = task
        request = steps[turn].content
        wanted = criteria(request)
        if not wanted:
            return []
        fields = records(steps, turn + 1)
        answer = normal(visible(steps[last].content))
        answer += " " + " ".join(
            normal(str(s.tool.arguments))
            for s in steps[turn + 1 :]
            if s.tool and side_effecting(s, ctx.policy)
        )
        facts = RunFacts.of(ctx)
        choices, unplaced = _choices(request, wanted, fields)
        # a bound no field's words name may rule out any candidate a record describes
        described = {e for f in fields.values() for e in f.entities} if unplaced else set()
        drafts = []
        seen: set[tuple[str, str]] = set()
        for choice in choices:
            others = {e for o in choices if o is not choice and o.measure is choice.measure for e in o.best}
            breach = _judge(choice, answer, unplaced, others)
            gap = None if breach is not None else _gap(choice, steps, turn, answer, others, described)
            found = breach or gap
            if found is None or (choice.measure.tool, found.named) in seen:
                continue
            seen.add((choice.measure.tool, found.named))
            drafts.append(
                self._draft(facts, turn, last, breach) if breach else self._unread(facts, turn, last, gap)
            )
        return drafts

    @staticmethod
    def _draft(facts: RunFacts, turn: int, end: int, breach: Breach) -> FindingDraft:
        steps = facts.steps
        c, m = breach.criterion, breach.measure
        best_at, named_at = m.read_at[breach.best], m.read_at.get(breach.named)
        if breach.broken is not None:
            b = breach.broken
            why = (
                f"the records read at step {steps[b.field.read_at[breach.named]].step_id} show that "
                f"{breach.named} does not meet the condition the request states "
                f"('{_said(b)}', from \"{b.sentence}\")"
            )
            against = b.field.read_at[breach.named]
        else:
            why = f"{breach.named} has a lower {c.noun} than {breach.best} in the records read"
            against = named_at if named_at is not None else best_at
        return failure_draft(
            facts,
            mode="1.1",
            pos=end,
            title=f"The answer names {breach.named}, not the option the user's criterion selects ({breach.best})",
            mechanism=(
                f"{_asked(facts, turn, c)}; among the candidates whose records meet the request's conditions, the records "
                f"read at step {steps[best_at].step_id} make {breach.best} that option, but the answer at "
                f"step {steps[end].step_id} names {breach.named} and never {breach.best}: {why}."
            ),
            violated="a choice the principal asked for by a stated criterion must be the one the records read select",
            evidence=[
                facts.unit(turn, c.sentence),
                facts.unit(best_at, breach.best),
                facts.unit(against, breach.named),
                _answer(facts, end, breach.named),
            ],
            effect=realized(
                f"the run's answer at step {steps[end].step_id} delivers {breach.named}",
                f"the user receives {breach.named} where the records select {breach.best}",
            ),
            path=[
                facts.hop(turn, "the criterion"),
                facts.hop(best_at, "the records that select another candidate"),
                facts.hop(end, "the answer names a candidate the records rule out"),
            ],
            confidence=CONFIDENCE if breach.broken is not None else EXTREME_CONFIDENCE,
        )

    @staticmethod
    def _unread(facts: RunFacts, turn: int, end: int, gap: Gap) -> FindingDraft:
        """Filed at the call that narrowed the candidates, else at the answer."""
        steps = facts.steps
        c, m, act = gap.criterion, gap.measure, gap.narrowed
        shown = ", ".join(gap.unread[:UNREAD_SHOWN]) + (" …" if len(gap.unread) > UNREAD_SHOWN else "")
        narrowing = (
            f" The call at step {steps[act].step_id} looked up listed candidates and left uncompared ones out."
            if act is not None
            else ""
        )
        return failure_draft(
            facts,
            mode="3.2",
            pos=act if act is not None else end,
            title=(
                f"The answer names {gap.named} as the option asked for without comparing "
                f"{len(gap.unread)} of the {gap.listed} candidates listed"
            ),
            mechanism=(
                f"{_asked(facts, turn, c)}; the result at step {steps[gap.listing].step_id} lists "
                f"{gap.listed} candidates, but for {shown} the records read before the answer show neither "
                f"a {c.noun} that puts them behind {gap.named} nor a condition of the request they fail."
                f"{narrowing} The answer at step {steps[end].step_id} names {gap.named}, the best of those "
                "compared: the choice is not shown to be the one asked for."
            ),
            violated="a choice the principal asked for by a stated criterion must compare every listed candidate",
            evidence=[
                facts.unit(turn, c.sentence),
                facts.unit(gap.listing, gap.unread[0]),
                facts.unit(act) if act is not None else None,
                facts.unit(m.read_at[gap.named], gap.named),
                _answer(facts, end, gap.named),
            ],
            effect=realized(
                f"the run's answer at step {steps[end].step_id} delivers {gap.named} as the option asked for",
                f"the user receives {gap.named} with {len(gap.unread)} listed candidates never compared",
            ),
            path=[
                facts.hop(turn, "the criterion"),
                facts.hop(gap.listing, "the candidates listed"),
                *([facts.hop(act, "the candidates narrowed")] if act is not None else []),
                facts.hop(end, "the answer chooses among some of them"),
            ],
            confidence=UNREAD_CONFIDENCE,
        )


def _asked(facts: RunFacts, turn: int, c: Criterion) -> str:
    which = "highest" if c.highest else "lowest"
    return (
        f"The user's request (step {facts.steps[turn].step_id}) asks for the option with the {which} {c.noun}"
    )


def _answer(facts: RunFacts, end: int, named: str) -> EvidenceUnit | None:
    """The answer's line that names the pick, quoted verbatim."""
    return facts.unit(end, _spelled(visible(facts.steps[end].content), named))


def _said(b: Condition) -> str:
    """A condition as the request words it."""
    if b.word is not None:
        return next((w for w in _WORD.findall(b.sentence) if stem(w) == b.word), b.word)
    if b.low is not None and b.high is not None:
        return f"between {b.low:g} and {b.high:g}"
    return f"under {b.high:g}" if b.high is not None else f"at least {b.low:g}"


def _spelled(content: str, name: str) -> str | None:
    """The name as the content spells it (case and apostrophes aside), for a verbatim quote."""
    target = normal(name)
    for line in content.splitlines():
        i = normal(line).find(target)
        if i >= 0:
            return line.strip()
    return None


@dataclass(frozen=True)
class Gap:
    """The answer's choice made among some of the listed candidates: the named one is the best of
    those compared, the listing at ``listing`` names others the records never compared, and the
    call at ``narrowed`` (if one) looked up some listed candidates and left an uncompared one out."""

    criterion: Criterion
    measure: Field
    named: str
    listing: int
    unread: list[str]
    listed: int
    narrowed: int | None


@dataclass(frozen=True)
class Choice:
    """One criterion applied to one measured set: the conditions that hold for it and the
    candidates the records read select."""

    criterion: Criterion
    measure: Field
    conditions: list[Condition]
    qualified: list[str]
    best: list[str]


def _choices(
    request: str, wanted: list[Criterion], fields: dict[tuple[str, str], Field]
) -> tuple[list[Choice], bool]:
    """Every criterion applied to its measured set, and whether the request states a bound no
    field's words match (then the qualified set is unknown)."""
    bounds = [(s, m) for s in _sentences(request) for m in _BOUND.finditer(s)]
    unplaced = bool(_BUDGET.search(request))
    placed: list[tuple[str, re.Match[str], Field]] = []
    for sentence, m in bounds:
        targets = _bounded_fields(sentence, m.start(), [f for f in fields.values() if f.numbers])
        placed += [(sentence, m, f) for f in targets]
        unplaced |= not targets
    handled: list[tuple[Criterion, Field]] = []
    for c in wanted:
        measures = [f for f in fields.values() if len(f.numbers) >= 2 and stem(c.noun) in f.label]
        for measure in _closest(c.sentence, measures):
            if any(f is measure and k.sentence == c.sentence for k, f in handled):
                continue
            if any(f is not measure and f.entities & measure.entities for _, f in handled):
                continue  # a later extreme over the same candidates only breaks ties
            handled.append((c, measure))
    choices = []
    for c, measure in handled:
        # several choices from one set ("French for lunch, Chinese for dinner"): each keeps to
        # the conditions of its own sentence
        alone = sum(f is measure for _, f in handled) == 1
        conditions = _conditions(request, c.sentence, measure, fields, placed, alone)
        choices.append(_choose(c, measure, conditions))
    return choices, unplaced


def _bounded_fields(sentence: str, at: int, candidates: list[Field]) -> list[Field]:
    """The numeric fields a bound at ``at`` limits: those whose label the sentence names
    nearest to the bound ("rated over 4 and priced under 200"), the closest named among them."""
    where = {m.start(): stem(m.group()) for m in _WORD.finditer(sentence)}
    distance = {
        id(f): min((abs(i - at) for i, w in where.items() if w in f.label), default=None) for f in candidates
    }
    near = min((d for d in distance.values() if d is not None), default=None)
    return _closest(sentence, [f for f in candidates if near is not None and distance[id(f)] == near])


def _closest(sentence: str, candidates: list[Field]) -> list[Field]:
    """The candidates whose names share the most words with the sentence ("the hotel with the
    best rating": the hotels' ratings, not the restaurants')."""
    words = stems(sentence)
    score = {id(f): len(f.names & words) for f in candidates}
    top = max(score.values(), default=0)
    return [f for f in candidates if score[id(f)] == top]


def _conditions(
    request: str,
    own: str,
    measure: Field,
    fields: dict[tuple[str, str], Field],
    placed: list[tuple[str, re.Match[str], Field]],
    alone: bool,
) -> list[Condition]:
    """The request's conditions on the measured set (the module doc)."""
    out = []
    overlapping = {id(f) for f in fields.values() if f.entities & measure.entities}
    for sentence, m, f in placed:
        if id(f) in overlapping and f is not measure and (alone or sentence == own):
            num, num2 = float(m.group("num")), m.group("num2")
            cmp = m.group("cmp").lower()
            if cmp == "between" and num2:
                out.append(Condition(f, low=num, high=float(num2), sentence=sentence))
            elif cmp in _UPPER:
                out.append(Condition(f, high=num, sentence=sentence))
            else:
                out.append(Condition(f, low=num, sentence=sentence))
    for f in fields.values():
        if not f.categorical or id(f) not in overlapping:
            continue
        vocabulary = set().union(*f.words.values())
        shared = set.intersection(*f.words.values())
        splitting = [(s, w) for s in _sentences(request) for w in stems(s) & vocabulary - shared]
        mine = {w for s, w in splitting if s == own}
        elsewhere = {w for _, w in splitting}
        chosen = mine or (elsewhere if alone and len(elsewhere) == 1 else set())
        for word in chosen:
            sentence = own if word in mine else next(s for s, w in splitting if w == word)
            out.append(Condition(f, word=word, sentence=sentence))
    return out


def _choose(c: Criterion, measure: Field, conditions: list[Condition]) -> Choice:
    """The candidates known to meet every condition, and the extreme ones among them."""
    qualified = [e for e in measure.numbers if all(k.holds(e) is True for k in conditions)]
    value = {e: _value(c, measure, e) for e in qualified}
    top = (max if c.highest else min)(value.values(), default=None)
    return Choice(c, measure, conditions, qualified, [e for e in qualified if value[e] == top])


def _value(c: Criterion, measure: Field, entity: str) -> float:
    """The end of a range the criterion looks at (a price range's top for "highest")."""
    lo, hi = measure.numbers[entity]
    return hi if c.highest else lo


def _judge(choice: Choice, answer: str, unplaced: bool, others: set[str]) -> Breach | None:
    """The breach, if the answer names a candidate the records rule out and not the one they
    select; a candidate another choice from the same set selects is that choice's answer."""
    c, measure, conditions = choice.criterion, choice.measure, choice.conditions
    if not choice.best:
        return None
    named = _named(measure.entities | _condition_entities(conditions), answer, others)
    if not named or any(e in named for e in choice.best):
        return None
    for e in named:
        broken = next((k for k in conditions if k.holds(e) is False and e in k.field.read_at), None)
        if broken is not None:
            return Breach(c, measure, choice.best[0], e, broken)
    if unplaced:
        return None
    top = _value(c, measure, choice.best[0])
    for e in named:
        if e in choice.qualified and _value(c, measure, e) != top:
            return Breach(c, measure, choice.best[0], e, None)
    return None


def _named(pool: set[str], answer: str, others: set[str]) -> list[str]:
    """The candidates the answer names, save those another choice from the same set selects."""
    said = set(_TOKEN.findall(answer))  # a name the answer holds has all its tokens there: test those only
    return [e for e in pool - others if said.issuperset(_TOKEN.findall(normal(e))) and normal(e) in answer]


def _gap(
    choice: Choice, steps: Sequence[TraceStep], turn: int, answer: str, others: set[str], described: set[str]
) -> Gap | None:
    """The choice of a candidate the records select when a listing the agent read names others
    it never compared: no failed condition was read for them, and their value either was not read
    or is as good while a condition's was not. ``described``: the candidates some record describes,
    any of which a bound the request states on no named field may rule out."""
    named = _named(set(choice.best), answer, others)
    if not named:
        return None
    known = {normal(e): e for e in choice.measure.entities | _condition_entities(choice.conditions)}
    top = _value(choice.criterion, choice.measure, choice.best[0])
    compared = set(choice.qualified) | others | described
    for pos, items in _listings(steps, turn + 1, set(known)):
        unread = []
        for item in items:
            entity = known.get(normal(item), item)
            if entity in compared:
                continue
            if any(k.holds(entity) is False for k in choice.conditions):
                continue  # ruled out by a record the agent read
            if entity in choice.measure.numbers and not _beats(choice, top, entity):
                continue  # worse on the measure: no condition could make it the one asked for
            unread.append(item)
        if unread:
            narrowed = _narrowing(steps, pos, items, unread)
            return Gap(choice.criterion, choice.measure, named[0], pos, unread, len(items), narrowed)
    return None


def _narrowing(steps: Sequence[TraceStep], listing: int, items: list[str], unread: list[str]) -> int | None:
    """The first call after the listing whose arguments name two listed candidates or more (as
    argument values of their own) but leave out one the records never compared: where the agent
    narrowed the candidates."""
    listed, left = {normal(i) for i in items}, {normal(i) for i in unread}
    for pos in range(listing + 1, len(steps)):
        step = steps[pos]
        if step.kind is not StepKind.tool_call or step.tool is None:
            continue
        named = {normal(text) for text in strings(step.tool.arguments)}  # the names it passes
        if len(named & listed) >= 2 and not left <= named:
            return pos
    return None


def _beats(choice: Choice, top: float, entity: str) -> bool:
    """The entity's measured value is as good as ``top``, the pick's."""
    value = _value(choice.criterion, choice.measure, entity)
    return value >= top if choice.criterion.highest else value <= top


def _listings(steps: Sequence[TraceStep], start: int, known: set[str]) -> Iterable[tuple[int, list[str]]]:
    """Tool results that list candidates by name (a JSON list of names, one name a line, bulleted
    or not, or names between bars, after an optional ``Label:``; or a record's names, as the
    features read for every candidate list them) and name at least two the records describe."""
    for pos in range(start, len(steps)):
        step = steps[pos]
        if step.kind is not StepKind.tool_result:
            continue
        items = _items(step.content) or list(_mapping(step.content) or ())
        if len(items) >= LISTED and len({normal(i) for i in items} & known) >= 2:
            yield pos, items


def _items(content: str) -> list[str]:
    """A result's names, if it is a listing of names and nothing else; else none."""
    text = content.strip()
    value = json_value(text) if text.startswith("[") else None
    if isinstance(value, list):
        items = value if all(isinstance(v, str) for v in value) else []
    else:
        items = [i.strip() for i in _ITEM_SEPARATOR.split(text)]
        label = _LISTING_LABEL.match(items[0])
        # a label heads the first name alone; a prefix every name carries ("Re: …") is theirs
        if label is not None and not any(i.startswith(label.group()) for i in items[1:]):
            items[0] = items[0][label.end() :].strip()
    items = [i for i in items if i]
    if items and all(i[:2] in _BULLETS for i in items):  # a YAML or Markdown list of names
        items = [i[2:].strip() for i in items]
    return items if all(len(i) <= NAME_CHARS for i in items) else []


def _condition_entities(conditions: list[Condition]) -> set[str]:
    return set().union(*(k.field.entities for k in conditions)) if conditions else set()

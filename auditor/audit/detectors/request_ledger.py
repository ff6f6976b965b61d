"""The request ledger: every customer request, the write it asks for, and its state over the run.

A request is a sentence of a claimant's message that asks for a write the agent was given. The
writes are the tools the policy's actions name (action rules, confirmations, requests); what the
agent was told of them comes from the trace: a ``tools`` list (name, description, parameters), or
the system prompt's line naming the tool. A sentence asks for a write when it names it by a word
that write alone has among the writes (name and description words against the others' names and
descriptions, parameter words against everything): its action word as a verb ("cancel my trip"
for ``cancel_reservation``), another of its words as the customer's own thing, after a possessive,
definite or numeral determiner ("my flight", "one checked bag"). Where only a word several writes
share is named in a request with a modal ("could you change my reservation"), the request is for
any of them, narrowed by each further thing named ("the items on my pending order"). A customer
correcting a value a record holds ("it should be Briggs, not Brigs") asks for the write whose
word names that value's field. No domain vocabulary is declared: the words are the tools' own.

A sentence or clause asks for nothing when it opens with a subordinator ("if that's not possible,
I might cancel"), is negated, states what is or was ("my flight was cancelled", "the reservation
id is ..."), or is a question that opens with no modal ("do you have later flights?"); a word of
a thing the records hold (a payment method's "certificate"), a word after "for" or after "of"
("the sum of my certificates") names no write. The closed classes these rules read (subordinators,
negators, modals, determiners, copulas) are grammar, not a domain's words.

Each request's state over the run, from the steps after it:

- *decided* by a write of its tool that went through (a restatement of a write already made is
  decided by it);
- *handed off* to a human (the policy's ``handoffs`` tool called);
- *refused* with a stated reason: a negated sentence of the agent once the record the request
  concerns was read (or a write of its tool failed), in its first message since or naming the
  request's tool by the customer's word; a refusal before any such fact states no policy reason;
- *open* otherwise, and always when the run ends on the claimant's message that made it.

A request for "all" ("every", "each", "both") covers every item the records list beside a key of
its record (a user's reservations) or the message names; items no write changed stay open although
others were decided (items read count as decided when the agent stated a refusal).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any, Literal

from auditor.audit.detectors.policy_facts import PolicyFacts
from schemas import ActorKind, StepKind, TraceStep

_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
# closed grammatical classes: subordinators that open a condition, negators, universal quantifiers
_CONDITIONAL = {"if", "unless", "whether", "otherwise"}
_NEGATION = re.compile(r"\b(?:not|never|neither|nor|cannot|unable|no longer)\b|n't\b", re.IGNORECASE)
_COPULA = {"is", "are", "am"}
_EVERY = {"all", "every", "each", "both"}
_PAST = {"was", "were", "been", "got"}
_MODAL = {"can", "could", "will", "would", "shall", "should", "may", "might", "must"}
# possessives, demonstratives, the definite article and numerals: "my flight", "one checked bag"
_DETERMINER = {"my", "our", "the", "this", "that", "these", "those", "one", "two", "three", "another"}
_ASKS = {"do", "does", "did", "is", "are", "what", "which", "when", "where", "how", "why", "who"}
State = Literal["decided", "handed_off", "refused", "open"]


@lru_cache(maxsize=1 << 16)
def _stem(word: str) -> str:
    """A word's stem for matching a tool's words: a plural's -s or -es and a verb's -ing dropped."""
    if word.endswith("ing") and len(word) >= 6:
        return word[:-3]
    if word.endswith(("ches", "shes", "sses", "xes", "zes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss") and len(word) >= 4:
        return word[:-1]
    return word


@lru_cache(maxsize=1 << 16)
def _matches(word: str, tool_word: str) -> bool:
    """``word`` (as the customer wrote it) names ``tool_word`` (a tool's own word): one stem
    begins the other, three letters at least; a past form (-ed) names no tool's action."""
    if word.endswith("ed") and not tool_word.endswith("ed"):
        return False
    a, b = _stem(word), _stem(tool_word)
    return len(min(a, b, key=len)) >= 3 and (a.startswith(b) or b.startswith(a))


@dataclass(frozen=True)
class Request:
    """One request: the claimant's message (position, step), the sentence, the writes it asks
    for (one, or those sharing the thing it names), and whether it covers every item the records
    list."""

    pos: int
    step: TraceStep
    sentence: str
    tools: tuple[str, ...]
    every: bool


@dataclass(frozen=True)
class Entry:
    """A request's state at the run's end; ``at`` the step that decided, refused or handed it off;
    ``open_items`` the listed items an "all" request left untouched."""

    request: Request
    state: State
    at: TraceStep | None
    open_items: tuple[str, ...] = ()


class RequestLedger:
    """The requests of one run and their states."""

    def __init__(self, facts: PolicyFacts) -> None:
        self.facts = facts

    @cached_property
    def _named_writes(self) -> list[str]:
        """The write tools the policy's rules, confirmations and requests name (handoffs aside)."""
        policy = self.facts.policy
        names = {
            t
            for group in (policy.action_rules, policy.confirmations, policy.requests)
            for r in group
            for t in r.tools
        }
        return sorted(names - set(policy.handoffs))

    @cached_property
    def _words(self) -> dict[str, tuple[set[str], set[str], set[str]]]:
        """Each write tool's (action word, named words, parameter words): the first word of its
        name; the rest of its name and its declared description; its declared parameters'."""
        return {name: self._words_of(name) for name in self._named_writes}

    @cached_property
    def writes(self) -> dict[str, tuple[set[str], set[str]]]:
        """Each write tool's (action words, other words) that no other write shares: its name's
        and description's against the other writes' names and descriptions (parameters such as
        a payment method id recur across tools and tell them apart less), its parameters' against
        every word of the others."""
        own: dict[str, tuple[set[str], set[str]]] = {}
        for name, (action, named, params) in self._words.items():
            others = [words for o, words in self._words.items() if o != name]
            said = {w for a, n, _ in others for w in a | n}
            every = said | {w for _, _, p in others for w in p}
            own[name] = (
                {w for w in action if not any(_matches(w, o) for o in said)},
                {w for w in named if not any(_matches(w, o) for o in said)}
                | {w for w in params - named if not any(_matches(w, o) for o in every)},
            )
        return own

    def _words_of(self, name: str) -> tuple[set[str], set[str], set[str]]:
        """One write's (action word, named words, parameter words), before any is compared."""
        parts = [p.lower() for p in re.findall(r"[A-Za-z][a-z]*", name)]
        action = set(parts[:1])
        named = set(parts[1:])
        params: set[str] = set()
        spec = self._declared.get(name)
        if spec:
            named |= {w for w in _WORD.findall(str(spec.get("description", "")).lower()) if len(w) > 3}
            params = {p.lower() for k in spec.get("parameters", {}) for p in re.findall(r"[A-Za-z][a-z]*", k)}
        return action, named - action, params - action

    @cached_property
    def _declared(self) -> dict[str, dict[str, Any]]:
        """Tool specs the trace declares: OpenAI ``tools`` in the header or beside the messages
        (name, description, parameters' properties), else the line of a system prompt that names
        the tool ("cancel_reservation(reservation_id): cancel the whole trip")."""
        meta = self.facts.ctx.trace.header.metadata
        fields = meta.get("fields") if isinstance(meta.get("fields"), dict) else {}
        specs = meta.get("tools") or fields.get("tools") or []
        out: dict[str, dict[str, Any]] = {}
        for spec in specs if isinstance(specs, list) else []:
            fn = spec.get("function", spec) if isinstance(spec, dict) else None
            if isinstance(fn, dict) and isinstance(fn.get("name"), str):
                params = fn.get("parameters") or {}
                props = params.get("properties") if isinstance(params, dict) else None
                out[fn["name"]] = {"description": fn.get("description", ""), "parameters": props or {}}
        system = [s.content for s in self.facts.steps if s.actor_kind is ActorKind.system]
        for name in self._named_writes:
            if name in out:
                continue
            pattern = re.compile(rf"(?<![\w.]){re.escape(name)}(?![\w])")
            line = next((ln for text in system for ln in text.splitlines() if pattern.search(ln)), None)
            if line is not None:
                out[name] = {"description": pattern.sub(" ", line), "parameters": {}}
        return out

    def tools_of(self, sentence: str) -> tuple[str, ...]:
        """The writes a sentence asks for: one, named by a word that tool alone has; those that
        share the thing the sentence names ("my reservation") when no tool is named alone; none
        when the sentence asks for no write (a condition, a negation, the past, a question for
        information, a statement of what something is)."""
        sentence = sentence.replace("\u2019", "'")  # a typographic apostrophe: "don’t" is "don't"
        words = _WORD.findall(sentence.lower())
        if not words or words[0] in _CONDITIONAL or words[0] == "no":
            return ()
        opener = next((w for w in words if w in _MODAL or w in _ASKS), None)
        if sentence.endswith("?") and opener not in _MODAL:
            return ()  # a question for information ("do you have later flights?"), not for a write
        by_action: set[str] = set()
        by_word: list[str] = []  # in the order named: the verb's object comes before a phrase's
        shared: list[set[str]] = []  # per thing named, the writes sharing its word
        for clause in sentence.lower().split(","):
            said = _WORD.findall(clause)
            if _NEGATION.search(clause) or (_COPULA | _PAST) & set(said):
                continue  # negated, a statement of what is or was ("my meeting was called off"), no ask
            for n, w in enumerate(said):
                if w in _CONDITIONAL:
                    break  # the rest is a subordinate clause ("let me know if I can change ...")
                before = said[max(0, n - 2) : n]
                if w in _MODAL or "for" in before or _stem(w) in self._things:
                    continue
                determined = any(b in _DETERMINER or b.isdigit() for b in before)
                noun = determined or any(b in ("a", "an") for b in before)
                about = "of" in said[max(0, n - 3) : n]  # "the sum of my certificates": about it, no change
                sharing: set[str] = set()
                for tool, (action, rest) in self.writes.items():
                    if not noun and any(_matches(w, a) for a in action):
                        by_action.add(tool)  # the action as a verb ("to cancel", "book a flight")
                    if not determined or about:
                        continue
                    if any(_matches(w, r) for r in rest) and tool not in by_word:
                        by_word.append(tool)  # the thing it changes, as the customer's own ("my flight")
                    elif any(_matches(w, r) for r in self._words[tool][1] | self._words[tool][2]):
                        sharing.add(tool)  # a thing several writes change ("my reservation")
                if sharing:
                    shared.append(sharing)
        if len(by_action) == 1:
            return tuple(by_action)
        if by_action:
            return ()
        if by_word:
            return (by_word[0],)
        corrected = self._corrected(sentence)
        if corrected:
            return corrected
        if not shared or not _MODAL & set(words):
            return ()
        # asked of things several writes share ("could you change the items on my pending order"):
        # each thing named narrows the writes
        return tuple(sorted(set.intersection(*shared)))

    def _corrected(self, sentence: str) -> tuple[str, ...]:
        """A correction of a record's value: the sentence names a value a record holds (a name
        at ``passengers.1.last_name``) and a like value no record holds ("it should be Briggs,
        not Brigs"); the write is the one whose own word names the value's field."""
        names = re.findall(r"(?<!^)(?<![.!?]\s)\b[A-Z][a-z]{2,}\b", sentence)
        held = [n for n in names if n in self._held]
        new = [n for n in names if n not in self._held and n.lower() not in self._things]
        if not held or not new:
            return ()
        path = self._held[held[0]]
        for tool, (_, rest) in self.writes.items():
            if any(_matches(part, r) for part in path for r in rest):
                return (tool,)
        return ()

    @cached_property
    def _held(self) -> dict[str, list[str]]:
        """Each one-word capitalised value the records hold (a person's name) -> its field path."""
        out: dict[str, list[str]] = {}
        for record in self.facts.records:
            stack: list[tuple[Any, list[str]]] = [(record.value, [])]
            while stack:
                value, path = stack.pop()
                if isinstance(value, dict):
                    stack.extend((v, [*path, str(k).lower()]) for k, v in value.items())
                elif isinstance(value, list):
                    stack.extend((v, path) for v in value)
                elif isinstance(value, str) and re.fullmatch(r"[A-Z][a-z]{2,}", value):
                    out.setdefault(value, path)
        return out

    @cached_property
    def _things(self) -> set[str]:
        """Words of the string values the records hold (a payment method's source, a cabin): a
        customer's word that names one speaks of that thing, not of a tool."""
        found: set[str] = set()
        for record in self.facts.records:
            stack: list[Any] = [record.value]
            while stack:
                value = stack.pop()
                if isinstance(value, dict):
                    stack.extend(value.values())
                    stack.extend(k for k in value if isinstance(k, str) and re.search(r"\d", k))
                elif isinstance(value, list):
                    stack.extend(value)
                elif isinstance(value, str):
                    found.update(_WORD.findall(value.lower().replace("_", " ")))
        return {_stem(w) for w in found if len(w) >= 3}

    @cached_property
    def requests(self) -> list[Request]:
        out = []
        for pos, step in enumerate(self.facts.steps):
            if step.kind is not StepKind.message or not self.facts.is_claimant(step):
                continue
            for sentence in (s.strip() for s in _SENTENCE.findall(step.content)):
                tools = self.tools_of(sentence)
                if tools:
                    every = bool(_EVERY & set(_WORD.findall(sentence.lower())))
                    out.append(Request(pos, step, sentence, tools, every))
        return out

    @cached_property
    def entries(self) -> list[Entry]:
        return [self._state(r) for r in self.requests]

    def _state(self, req: Request) -> Entry:
        facts = self.facts
        writes = [c for c in facts.calls if c.name in req.tools and c.result is not None and not c.failed]
        done = [c for c in writes if c.pos > req.pos]
        if self._last_message == req.pos and not any(c.pos < req.pos for c in writes):
            return Entry(req, "open", None)  # the run ends on it: nobody answered
        refusal = self._refusal(req)
        open_items = self._untouched(req, refusal is not None) if req.every else ()
        if done and not open_items:
            return Entry(req, "decided", done[0].step)
        handoff = next((c for c in facts.calls if c.pos > req.pos and c.name in facts.policy.handoffs), None)
        if handoff is not None:
            return Entry(req, "handed_off", handoff.step)
        if refusal is not None and not done:
            return Entry(req, "refused", refusal)
        if not done and any(c.pos < req.pos for c in writes) and not open_items:
            return Entry(req, "decided", writes[-1].step)  # restates a write already made
        return Entry(req, "open", None, open_items)

    @cached_property
    def _last_message(self) -> int:
        steps = self.facts.steps
        return max(
            (p for p, s in enumerate(steps) if s.kind is StepKind.message and s.content.strip()), default=-1
        )

    def _refusal(self, req: Request) -> TraceStep | None:
        """The agent's message that refuses the request on the policy's grounds: a negated
        sentence once the record the request concerns was read (or a write of its tool failed),
        in the agent's first message since then or naming the request's tool by the customer's
        word. A refusal before any such fact is known states no policy reason."""
        facts = self.facts
        own = {w for t in req.tools for part in self._words[t] for w in part}
        said = [w for w in _WORD.findall(req.sentence.lower()) if any(_matches(w, t) for t in own)]
        records = {self._record_of(t) for t in req.tools}
        facts_at = [r.pos for r in facts.records if None in records or r.name in records]
        facts_at += [c.pos for c in facts.calls if c.name in req.tools and c.failed]
        first = True
        for pos in range(req.pos + 1, len(facts.steps)):
            step = facts.steps[pos]
            if step.kind is not StepKind.message or step.actor_kind is not ActorKind.agent:
                continue
            if not step.content.strip() or not any(p < pos for p in facts_at):
                continue
            for sentence in _SENTENCE.findall(step.content):
                plain = sentence.replace("\u2019", "'")
                if _NEGATION.search(plain) and (first or any(w in plain.lower() for w in said)):
                    return step
            first = False
        return None

    def _record_of(self, tool: str) -> str | None:
        """The record a write concerns: the policy's request entry's, else an action rule's."""
        policy = self.facts.policy
        named = [k.record for k in policy.requests if tool in k.tools]
        named += [r.record for r in policy.action_rules if tool in r.tools and r.record]
        return named[0] if named else None

    def _untouched(self, req: Request, refused: bool) -> tuple[str, ...]:
        """For an "all" request: the items it covers (keys of its record that the claimant's
        message names, or that another record read lists beside a key of the request's) that no
        write of its tool changed; an item read counts as decided when the agent stated a refusal."""
        facts = self.facts
        name = self._record_of(req.tools[0])
        if name is None:
            return ()
        spec = facts.policy.record(name)
        read = {r.key for r in facts.records if r.name == name}
        written = {
            str(c.arguments.get(spec.key)) for c in facts.calls if c.name in req.tools and not c.failed
        }
        covered = {k for k in read if re.search(rf"(?<!\w){re.escape(k)}(?!\w)", req.step.content)}
        for r in facts.records:
            if r.name == name:
                continue
            for value in r.value.values():
                keys = (
                    set(value)
                    if isinstance(value, list) and all(isinstance(v, str) for v in value)
                    else set()
                )
                if keys & (read | written):
                    covered |= keys
        return tuple(sorted(covered - written - (read if refused else set())))

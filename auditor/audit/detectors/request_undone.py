"""A request the principal made that the run ended without acting on (issue 28, item 5).

Agent benchmarks and many deployments pose a task as **one principal turn**: the user's message,
then the agent alone with its tools until its final answer. No one answers a question the agent
asks at the end, so an action the message asked for and the run never took is left undone —
whatever the agent says about it ("could you confirm the date?", "I cannot proceed").

What counts, by grammar and by the run's own calls, never by a domain's words:

- an *action request* is a verb the principal's message puts to the agent: after a request marker
  ("please …", "can/could/would/will you …", "go ahead and …", "make sure to …"), at the head of a
  sentence in the imperative (the verb followed by its object: a determiner, a pronoun, a
  question word), or joined by "and"/"then" to such a verb ("read the file and follow …"). A verb
  that only asks to be informed (``INFORMING_VERBS``: the reading verbs tools are named by, and
  the verbs of telling) asks for no action: "tell me", "recommend a hotel", "check the history";
- the request is *acted on* when any side-effecting call (``tool_effects``) follows it: which
  write serves which verb takes the tools' declarations, which these runs do not carry, so any
  write counts (a wrong write is another finding's business).

Filed at the agent's final message, citing the request and that message; realized (the run's end
state lacks the action). A request under a condition ("if it's rated above 4, go ahead and book")
holds only when the data met the condition, which the review does not weigh: lower confidence.
Multi-turn conversations are the request ledger's (``request_ledger``), which follows each request
through the replies.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from auditor.audit.detectors.base import AuditContext, FindingDraft
from auditor.audit.detectors.failure_facts import RunFacts, failure_draft, one_turn_task, realized
from auditor.audit.detectors.tool_effects import READING_VERBS, side_effecting
from schemas import RiskClass

# Verbs that ask the agent to inform, not to act: the reading verbs tools are named by, and the
# verbs of telling, advising and looking. "Share the names" informs as "tell" does; "express
# your answer in …" asks for a form of the answer; the verbs of composing ("write a haiku") ask for
# the answer itself.
INFORMING_VERBS = READING_VERBS | {
    "tell", "give", "recommend", "suggest", "provide", "let", "list", "look", "see", "help", "estimate",
    "summarize", "summarise", "explain", "compare", "choose", "pick", "select", "go", "consider",
    "review", "confirm", "know", "answer", "figure", "identify", "determine", "use", "keep",
    "remember", "assume", "note", "include", "try", "ask", "share", "express", "state", "report",
    "open", "write", "compose", "draft", "translate", "rewrite", "paraphrase", "outline", "generate", "solve",
}  # fmt: skip
# closed classes: what may stand between a marker and its verb, what opens an imperative's object
_LEADING = {"also", "just", "now", "then", "and", "please", "first", "finally", "so", "kindly"}
_OBJECT = {
    "my", "the", "a", "an", "them", "me", "it", "this", "that", "their", "your", "our", "his", "her",
    "us", "him", "some", "all", "any", "these", "those", "every", "each", "both",
    "how", "what", "which", "whether", "who", "where", "when", "why",
}  # fmt: skip
_PARTICLE = {"up", "out", "back", "down", "off", "over"}
_FUNCTION = {
    "i", "we", "you", "he", "she", "it", "they", "for", "with", "from", "but", "of", "after", "before",
    "in", "on", "at", "to", "by", "as", "than", "that", "which", "there", "here", "is", "are", "was",
    "were", "be", "have", "has", "had", "do", "does", "did", "not", "no", "yes", "hi", "hey", "hello",
    "thanks", "thank", "if", "unless", "whether", "once", "when", "a", "an", "the", "my", "your",
    "during", "under", "about", "into", "onto", "within", "without", "between", "among", "through",
    "across", "since", "until", "while", "although", "though", "because", "below", "above", "near",
    "around", "per", "via", "like", "upon", "toward", "towards", "against", "beyond", "despite",
}  # fmt: skip
_MARKER = re.compile(
    r"(?i)\b(?:please|(?:can|could|would|will) you|(?:want|need|would like) you to|go ahead and|make sure to"
    r"|be sure to)"
    r"(?:\s+(?:please|also|just|kindly))*\s+([a-z']+)"
)
_CONDITION = re.compile(r"(?i)\b(?:if|unless|once|in case)\b")
_CONDITIONAL = {"if", "unless", "once", "when", "whenever"}
_NEGATED = re.compile(r"(?i)\b(?:not|never|don't|do not)\b")
_SENTENCE = re.compile(r"(?<=[.!?:])\s+|\n")  # a label ("Question: …") stands apart too
_WORD = re.compile(r"[A-Za-z]+(?:'[a-z]+)?")
CONFIDENCE = 0.6
CONDITIONAL_CONFIDENCE = 0.4


@dataclass(frozen=True)
class ActionRequest:
    """One sentence of the principal's message asking for an action: its verbs, whether a
    condition governs it."""

    sentence: str
    verbs: tuple[str, ...]
    conditional: bool


def action_requests(message: str) -> list[ActionRequest]:
    """The sentences of a principal's message that ask the agent to act (the module doc)."""
    out = []
    for sentence in (s.strip() for s in _SENTENCE.split(message) if s and s.strip()):
        verbs = [v for v in _requested_verbs(sentence) if v not in INFORMING_VERBS]
        if verbs and not _NEGATED.search(sentence):
            out.append(
                ActionRequest(sentence, tuple(dict.fromkeys(verbs)), bool(_CONDITION.search(sentence)))
            )
    return out


def _requested_verbs(sentence: str) -> list[str]:
    """Every verb the sentence puts to the agent: after a marker, at its head in the imperative,
    the head of the main clause after a condition, and joined to those by "and"/"then"."""
    words = [w.lower() for w in _WORD.findall(sentence)]
    verbs = [m.group(1).lower() for m in _MARKER.finditer(sentence) if _verb_like(m.group(1).lower())]
    heads = [next((i for i, w in enumerate(words) if w not in _LEADING), len(words))]
    if words and words[0] in _CONDITIONAL and "," in sentence:  # "if it rains, add a reminder"
        heads.append(len(_WORD.findall(sentence.split(",", 1)[0])))
    verbs += [words[h] for h in heads if _imperative(words, h)]
    if verbs:
        verbs += [
            words[i + 1] for i, w in enumerate(words) if w in ("and", "then") and _imperative(words, i + 1)
        ]
    return verbs


def _verb_like(word: str) -> bool:
    """A word that can be a verb's base form: no function word, no -s form, no contraction."""
    return word not in _FUNCTION and "'" not in word and not (word.endswith("s") and not word.endswith("ss"))


def _imperative(words: list[str], i: int) -> bool:
    """``words[i]`` opens an imperative: a verb-like word followed by its object — a determiner, a
    pronoun, a question word — or by a particle and its object ("set up a transfer"). A name as
    the object ("invite Dora") is not read: a title or a data line ("New York …", "Adelie,Torgersen")
    has the same shape."""
    if i >= len(words) or not _verb_like(words[i]):
        return False
    after = words[i + 1 : i + 3]
    if after and after[0] in _PARTICLE:
        after = after[1:]
    return bool(after) and after[0] in _OBJECT


class RequestUndoneDetector:
    name = "request_undone"
    risk_class = RiskClass.task_failure
    needs_annotations = False

    def detect(self, ctx: AuditContext) -> Iterable[FindingDraft]:
        steps = ctx.trace.steps
        task = one_turn_task(steps)
        if task is None:
            return []  # several turns: the request ledger follows each request through the replies
        turn, last = task
        requests = action_requests(steps[turn].content)
        if not requests:
            return []
        if any(side_effecting(s, ctx.policy) for s in steps[turn + 1 :]):
            return []
        return [self._draft(RunFacts.of(ctx), turn, last, requests)]

    @staticmethod
    def _draft(facts: RunFacts, turn: int, end: int, requests: list[ActionRequest]) -> FindingDraft:
        steps = facts.steps
        verbs = ", ".join(f"'{v}'" for r in requests for v in r.verbs)
        firm = [r for r in requests if not r.conditional]
        return failure_draft(
            facts,
            mode="3.1",
            pos=end,
            title=f"The run ended without the action its user asked for ({verbs})",
            mechanism=(
                f"The user's only message (step {steps[turn].step_id}) asks the agent to act ({verbs}); "
                f"no call that changes anything followed, and the run ended on {steps[end].actor}'s "
                f"message at step {steps[end].step_id}, which nobody answers in a one-turn run."
            ),
            violated="a run given one request must carry out the actions it asks for before it ends",
            evidence=[facts.unit(turn, r.sentence) for r in requests] + [facts.unit(end)],
            effect=realized(
                f"the run ended at step {steps[end].step_id} with no side-effecting call after the request",
                "the action the user asked for was never taken",
            ),
            path=[facts.hop(turn, "the request"), facts.hop(end, "the run ends, the action untaken")],
            confidence=CONFIDENCE if firm else CONDITIONAL_CONFIDENCE,
        )

"""Instructions inside data: spans of a data-channel step that address the agent with a request to act.

Text in a tool result may well be imperative ("Please pay the amount to the account below", "make
sure to update your records"): it speaks to the document's reader, who is the principal, and doing
what the principal asked with it is the agent's job. A span is marked as an **instruction to the
agent** only when two things hold within one passage of a data step:

1. **a directive**: a sentence in the imperative (its first word, after a politeness marker such
   as "please", is an open-class word followed by a word that starts its object: a determiner, a
   pronoun, a number or a value — "send a …", "change the …", "tell me …"; or its first word is the
   verb of a tool the agent used, "invite …", "post …"), or an obligation put to the reader
   ("you must / should / need to / have to …");
2. **an addressee that is the agent, not the principal**, shown by the passage's structure:
   - it names the agent: an acting agent's name in the trace (not a role word, ``agent`` or
     ``main``), the model family that the header's metadata names, or a noun for a software agent
     (assistant, AI, model, …);
   - it refers to the principal in the third person while it speaks to its reader ("the user's
     phone", the name of a participant the trace marks human): the reader is someone else;
   - it refers to the reader's own conversation: the task, request, prompt or instructions the
     second person holds or was given ("your instructions", "the task I gave you"), not a manual's
     "you" near an HTTP request;
   - in a program listing (a source file, grep's matches in one) only the first counts, and only
     where a sentence calls the agent by name ("# Note to AI agents: …"): a program's docstrings
     and messages speak to its own users, and "main" or "agent" are words of any program.

The words involved are grammar (closed-class words), the trace's own participant and tool names,
and the nouns that name an agent and its conversation; never an attacker's phrasing. A passage is
a paragraph (blank lines, or ``\\n\\n`` escaped inside a JSON or YAML string, separate them); one
over ``WINDOW`` characters is cut into windows around each directive.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import lru_cache

from graph.alternation import Alternation, Alternative
from graph.channels import NO_DECLARATIONS, Channel, ChannelDeclarations, channel_of
from graph.vocab import SAME_ACT
from schemas import ActorKind, Trace, TraceStep

CONTEXT = 400  # characters on each side of a directive where its addressee is looked for
DETAILS = 2  # prose sentences after a directive read as its details
UNREQUESTED = "asks for an act the principal did not ask for"  # the signal of a directive to no one named


def _words(text: str) -> frozenset[str]:
    """A word list written as prose: one line to read, not one word a line."""
    return frozenset(text.split())


# Determiners and pronouns: they open a noun phrase, so an imperative's object, never its verb.
_DETERMINERS = _words(
    "a all an any each every her him his it its me my our some that the their them these this those us your"
)
# Closed-class words: a sentence that starts with one is not in the imperative.
_CLOSED = _DETERMINERS | _words(
    "about above after also am and are as at be been before being below best but by can cheers could dear for from good great had has have he hello here hey hi how i if in into is just kind may might must no nor not of ok okay on only onto or over regards shall she should sincerely so thank thanks there they to under until very warm was we were what when where which while who whom whose why will with without would yes yet you"
)
# Words no sentence ends on (articles, possessives, prepositions, conjunctions): a line break after
# one is inside the sentence, whatever the next line opens with.
_UNFINISHED = _words(
    "a an the my your his her our their its to of with from for in on at by into onto about under over as than and or but nor"
)
# Words that open an object after an imperative verb.
_OBJECT_START = _DETERMINERS | _words("anything everything one something three two")
# words before an imperative's verb: politeness, the conjunction that opens a next step ("And send
# …") and an emphatic "do" ("Do send …"; "do not" opens no act: "not" is closed-class)
_CONNECTIVES = frozenset(
    {"please", "kindly", "now", "then", "first", "also", "immediately", "simply", "just", "and", "do"}
)
_OBLIGATION = re.compile(
    r"\byou\s+(?:must|should|need\s+to|have\s+to|are\s+(?:required|expected|asked)\s+to|will\s+need\s+to)\b",
    re.I,
)
_AGENT_NOUNS = frozenset({"assistant", "ai", "llm", "chatbot", "bot"})
# an actor the log names only by its role (the importers' "agent" where a session names no agent,
# a framework's "main"): a word any text writes ("user agent", ngrok's "agent configuration file",
# "def main"), so it names no addressee
_ROLE_WORDS = frozenset({"agent", "main"})
_CONVERSATION_NOUN = r"(?:tasks?|requests?|prompts?|instructions?)"
# words that say which of the reader's tasks or instructions (its first, its own, the system's),
# never what kind of thing the noun is ("your pull request", "your shell prompt" are none of them)
_WHICH = (
    r"(?:own|original|previous|prior|earlier|initial|first|current|main|actual|real|system|assigned|given)"
)
# the reader's own conversation: a noun of it that the second person holds ("your task", "your
# original instructions") or was given ("the task (that) I gave you", "the request you were given");
# "you" and "request" anywhere near each other is any manual's reader and its HTTP request
_READERS_CONVERSATION = re.compile(
    rf"\byour\s+(?:{_WHICH}\s+){{0,2}}{_CONVERSATION_NOUN}\b"
    rf"|\b{_CONVERSATION_NOUN}\s+(?:\w+\s+){{0,3}}?(?:gave|given|assigned|sent)\s+(?:to\s+)?you\b"
    rf"|\b{_CONVERSATION_NOUN}\s+you\s+(?:were|have\s+been|'ve\s+been|got|received)\b",
    re.I,
)
_CODE = re.compile(r"[=;{}]|\w\(|^\s*(?:return|def|class|import|from)\b")
# a URL or an e-mail address: the alternation (?:[a-z][a-z0-9+.-]*://|www\.)\S+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+
# (re.I), scanned from the starts where each branch matches (tried at every letter of a long word, it
# was quadratic there)
_URL = re.compile(r"(?:[a-z][a-z0-9+.-]*://|www\.)\S+", re.I)
_ADDRESS = Alternation(
    Alternative(  # a scheme: each letter of the run before a '://'
        _URL, re.compile(r"(?<![a-z0-9+.-])[a-z0-9+.-]++(?=://\S)", re.I), within=re.compile(r"[a-z]", re.I)
    ),
    Alternative(_URL, re.compile(r"(?=www\.\S).", re.I)),
    Alternative(  # an e-mail address: each position of the run before an '@' that a domain follows
        re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+", re.I),
        re.compile(r"(?<![\w.+-])[\w.+-]++(?=@[\w-]++\.[\w-])", re.I),
    ),
)
# a quoted value: in single, double or typographic quotes, or a YAML single-quoted string's doubled ones
_QUOTED = re.compile(
    r"''[^'\n]{1,200}?''|'[^'\n]{1,200}?'|\"[^\"\n]{1,200}?\"|“[^”\n]{1,200}?”|‘[^’\n]{1,200}?’"
)
_CONTINUATION = re.compile(r"\\\r?\n[ \t]*\\?")  # an escaped line break, and YAML's escaped indent after it
_BLANK = re.compile(r"(?:\s|\\[nt]|\\\r?\n|\\ )*")  # white space, also escaped, and escaped line breaks
_PARAGRAPH_BREAK = re.compile(
    r"\n[ \t]*\n|\\n(?:[ \t]|\\t)*\\n"
)  # a blank line, also one escaped in a string
# the one a sentence addresses, after any comment or quote markup ("Bob, …", "# Claude, …")
_VOCATIVE = re.compile(
    r"^\s*(?:(?:#+|//+|\*|>|-)\s*)?(?:[A-Za-z][\w-]*\s+){0,2}[A-Za-z][\w-]*\s*,\s*(?=[A-Za-z])"
)
# a bullet or number, an opening quote, markup and a tag ("### ", "[note] ", "(system_message) "),
# then a word
_PROSE_START = re.compile(
    r"^(?:[-*•>]\s+|\d{1,2}[.)]\s+)?['\"“‘]?(?:#++ ?|\([\w ]{1,30}\) ?|\[[\w ]{1,30}\] ?)*+[A-Za-z]"
)
# a line of a program: a statement (a keyword, a decorator, an assignment, a call) or a comment, also
# as grep and numbered views print it ("path:12:", "12  ")
_STATEMENT = re.compile(
    r"^(?:[\w./-]*:\d+[:-]|\s*\d+\s)?\s*(?:"
    r"(?:def|class|import|from|return|if|elif|else|for|while|try|except|finally|with|raise|assert|yield|async|await"
    r"|pass|break|continue|function|const|let|var|public|private|static|package)\b"
    r"|@\w|#(?![#!])|//|/\*|\*/"
    r"|[\w.\[\]\"']+\s*(?:[-+*/|&%]|//|\*\*)?=(?!=)"
    r"|[\w.]+\(.*[),:]\s*$"
    r")"
)
# a sentence's first words ending in one followed by a colon or a comma: where a name calls its bearer
# (read from the last of a run of sentence ends: from each of them, a row of dots was read to its end)
_CALLED = re.compile(r"(?:^|[\n.!?])[^\w\n.!?]*((?:[A-Za-z][\w-]*[ \t]+){0,3}?[A-Za-z][\w-]*)[ \t]*[:,]")
LISTING = 0.1  # the share of a step's lines that are statements, at least, for it to be a program listing
_SECOND_PERSON = re.compile(r"\b(?:you|your|yourself)\b", re.I)
_WORD = re.compile(
    r"(?<![\w-])[A-Za-z]+(?!\w|-[A-Za-z])"
)  # a word: "user_id", "root-user" are names, not "user"; "GPT-4" holds "GPT"
# A sentence ends at . ! ? (or a colon, after which an instruction often starts) or at a line break (also one escaped as \n inside a JSON or YAML string)
# after which the text goes on with a capital, a bullet, markup or a value: a line broken inside a
# sentence (a folded YAML string) goes on in lower case; a line break escaped by a backslash (a YAML
# double-quoted string's folding, a shell's or Python's line continuation) continues the line.
# a line break's blank run is matched from the run's start only (?<!…), whole and once (*+): tried at
# every blank of a long run, or backtracked to each line break in it before a lower-case letter, it
# was read to its end each time (quadratic)
_SENTENCE_END = re.compile(
    r"[.!?:]+(?=\s|$|\\n)|(?<![\s\\])(?<!\\n)(?=[^\S\r\n]*+(?:\r?\n|\\n))(?:\s|\\n)*+(?=[^a-z]|$)"
)


@dataclass(frozen=True)
class InstructionSpan:
    """Directives of one data step, near each other, that address the agent with a request to act."""

    step_id: str
    start: int  # character offsets in the step's content: the first directive's start, the last one's end
    end: int
    directives: tuple[str, ...]  # each directive sentence, verbatim
    signals: tuple[str, ...]  # which addressee signals were found around them
    details: tuple[str, ...] = ()  # the prose right after a directive that gives its values, verbatim

    def to_dict(self) -> dict[str, object]:
        return {
            "step_id": self.step_id,
            "start": self.start,
            "end": self.end,
            "directives": list(self.directives),
            "signals": list(self.signals),
            "details": list(self.details),
        }


@dataclass(frozen=True)
class Addressees:
    """What names the agent, and what names the principal, in this trace."""

    agent_words: frozenset[str]
    principal_words: frozenset[str]
    tool_verbs: frozenset[str]
    requested: frozenset[str] = frozenset()  # the stems of every word the principal's steps say

    @classmethod
    def of(cls, trace: Trace, declared: ChannelDeclarations = NO_DECLARATIONS) -> Addressees:
        agents: set[str] = set(_AGENT_NOUNS)
        principals: set[str] = set()
        verbs: set[str] = set()
        for step in trace.steps:
            channel = channel_of(step, declared)
            if channel is Channel.agent:
                agents.add(step.actor.strip().lower())
                if step.tool is not None and len(verb := tool_verb(step.tool.name)) > 2:
                    verbs.add(verb)
            elif channel is Channel.principal and step.actor_kind is ActorKind.human:
                principals.add(step.actor.strip().lower())
        agents.update(_model_families(trace.header.metadata))
        agents -= _ROLE_WORDS
        return cls(frozenset(agents), frozenset(principals - agents), frozenset(verbs - _CLOSED))

    def with_requests(self, trace: Trace, declared: ChannelDeclarations = NO_DECLARATIONS) -> Addressees:
        """These addressees, knowing every word the principal says (for ``unaddressed``): the
        person's own steps where the trace holds any, else every principal step. A system prompt
        is the agent's standing configuration, not a request: its "don't make assumptions" asks
        for no act, and would excuse data's "make a reservation …"."""
        principal = [s for s in trace.steps if channel_of(s, declared) is Channel.principal]
        person = [s for s in principal if s.actor_kind is ActorKind.human]
        said = {_stem(w.lower()) for step in person or principal for w in _WORD.findall(step.content)}
        return replace(self, requested=frozenset(said))

    def asked_for(self, tool: str) -> bool:
        """Whether the principal's words name the act of this tool ("send" of ``send_email``)."""
        return _stem(tool_verb(tool)) in self.requested

    def directs(self, directive: str, tool: str) -> bool:
        """Whether a directive asks for this tool's act: its verb is a word of the tool's name
        ("email the file to …" of ``send_email``), or the tool's verb is a word of the directive
        ("concatenate the messages and post them …" of ``post_webpage``)."""
        verb = _imperative_verb(directive, self)
        named = {_stem(w) for w in re.split(r"[_\W]+", tool.lower())}
        said = {_stem(w.lower()) for w in _WORD.findall(directive)}
        return verb is not None and (bool(_acts(verb) & named) or bool(_acts(tool_verb(tool)) & said))


def tool_verb(tool: str) -> str:
    """The verb a tool's name opens with (``send_email`` → "send")."""
    return re.split(r"[_\W]+", tool.strip().lower())[0]


def _model_families(metadata: object, depth: int = 0) -> set[str]:
    """The family names of the models the header names ("claude-3-5-sonnet" → "claude") at any
    depth of its metadata: an importer keeps a source's own metadata object nested."""
    found: set[str] = set()
    if isinstance(metadata, dict) and depth < 4:
        for key, value in metadata.items():
            if isinstance(value, str) and "model" in str(key).lower():
                found.update(w.lower() for w in re.findall(r"[A-Za-z]{3,}", value.split("/")[-1])[:1])
            else:
                found |= _model_families(value, depth + 1)
    return found


def instruction_spans(trace: Trace, declared: ChannelDeclarations = NO_DECLARATIONS) -> list[InstructionSpan]:
    """Every instruction to the agent found in the trace's data steps, in trace order."""
    addressees: Addressees | None = None
    spans: list[InstructionSpan] = []
    cue: re.Pattern[str] | None = None
    for step in trace.steps:
        if step.content and channel_of(step, declared) is Channel.data:
            if addressees is None or cue is None:
                addressees = Addressees.of(trace, declared)
                words = "|".join(sorted(map(re.escape, addressees.agent_words))) or "(?!)"
                cue = re.compile(rf"\b(?:you|your|{words})\b", re.I)
            if cue.search(step.content):  # every addressee signal needs one of these words
                spans.extend(spans_in(step, addressees))
    return spans


def spans_in(step: TraceStep, addressees: Addressees, unaddressed: bool = False) -> Iterator[InstructionSpan]:
    """The step's marked directives; those within ``CONTEXT`` of each other form one span. With
    ``unaddressed``, the directives that name no addressee and ask for an act the principal's words
    never name (signal ``UNREQUESTED``) instead: data speaks in the imperative all the time, so
    they are no instruction to the agent until a call does what one asked (the detector's test)."""
    content = step.content
    group: list[tuple[int, int, tuple[str, ...], tuple[str, ...]]] = []
    bounds = list(sentences(content))
    listing: bool | None = None
    for i, (lo, hi) in enumerate(bounds):
        if not _is_directive(content[lo:hi], addressees):
            continue
        if i + 1 < len(bounds) and _introduces(content[lo : bounds[i + 1][0]]):
            hi = bounds[i + 1][1]  # "send it to this address: x@y.z": what the colon introduces is its object
        listing = _is_listing(content) if listing is None else listing
        signals = (
            _called_signal(content[bounds[i - 1][0] if i else lo : hi], addressees)
            if listing
            else _signals(content[lo:hi], content[max(0, lo - CONTEXT) : hi + CONTEXT], addressees)
        )
        if unaddressed:
            if signals or not _unrequested(content[lo:hi], addressees):
                continue
            signals = (UNREQUESTED,)
        elif not signals:
            continue
        if group and lo - group[-1][1] > CONTEXT:
            yield _span(step, group)
            group = []
        text_end = lo + len(content[lo:hi].rstrip())
        group.append((lo, hi, signals, _details(content, bounds, i + 1, text_end, addressees)))
    if group:
        yield _span(step, group)


def _details(
    content: str, bounds: list[tuple[int, int]], after: int, end: int, addressees: Addressees
) -> tuple[str, ...]:
    """The prose sentences right after a directive (whose text ends at ``end``; ``bounds[after:]``
    follow it), in its paragraph, that are no directive themselves ("The subject should be …"):
    they give its values. Up to ``DETAILS``; a blank line, a record line or a sentence that is not
    prose ends them."""
    out: list[str] = []
    last = end  # where the text before the next sentence ends
    for lo, hi in bounds[after : after + DETAILS + 1]:
        if lo < end:
            continue
        sentence = content[lo:hi]
        if (
            len(out) == DETAILS
            or _PARAGRAPH_BREAK.search(content, last, lo)
            or not _prose(sentence)
            or _is_directive(sentence, addressees)
        ):
            break
        out.append(sentence.strip())
        last = lo + len(sentence.rstrip())
    return tuple(out)


def _introduces(sentence: str) -> bool:
    """Whether a sentence ends in a colon followed on its line by what it introduces (a record's
    "participants:" over a list on the next lines introduces nothing to the sentence)."""
    head, colon, gap = sentence.rstrip(" \t").rpartition(":")
    return bool(colon) and not gap and bool(head)


def _span(step: TraceStep, group: list[tuple[int, int, tuple[str, ...], tuple[str, ...]]]) -> InstructionSpan:
    signals = tuple(dict.fromkeys(s for _, _, found, _ in group for s in found))
    directives = tuple(step.content[lo:hi].strip() for lo, hi, _, _ in group)
    details = tuple(dict.fromkeys(d for *_, found in group for d in found if d not in directives))
    return InstructionSpan(step.step_id, group[0][0], group[-1][1], directives, signals, details)


def sentences(content: str) -> Iterator[tuple[int, int]]:
    """Sentence bounds (the rule is at ``_SENTENCE_END``), leading white space (also escaped, and
    escaped line breaks) skipped."""
    start = 0
    for m in [*_SENTENCE_END.finditer(content), None]:
        if m is not None and m.group()[:1] not in ".!?:" and _last_word(content, m.start()) in _UNFINISHED:
            continue  # "Delete the file with\n    ID '13'": no sentence ends on "with"
        end = m.end() if m else len(content)
        lo = min(_BLANK.match(content, start).end(), end)  # type: ignore[union-attr]
        if lo < end:
            yield lo, end
        start = end


def _last_word(content: str, end: int) -> str:
    """The word that ends at ``end`` (lower case; empty where none does)."""
    start = end
    while start > 0 and end - start < 12 and content[start - 1].isalpha():
        start -= 1
    return content[start:end].lower()


def _is_directive(sentence: str, addressees: Addressees) -> bool:
    """An imperative or an obligation put to the reader, in prose (code and records are not)."""
    if not _PROSE_START.match(sentence) or not _prose(sentence):
        return False
    return bool(_OBLIGATION.search(sentence)) or _imperative_verb(sentence, addressees) is not None


def _imperative_verb(sentence: str, addressees: Addressees) -> str | None:
    """The verb a sentence in the imperative opens with ("send a …", "please email the …"), or None."""
    sentence = _VOCATIVE.sub("", sentence)  # "Bob, send …": the one addressed is no verb
    words = [w.lower() for w in _WORD.findall(sentence)]
    while words and words[0] in _CONNECTIVES:
        words = words[1:]
    if len(words) < 2:
        return None
    verb, nxt = words[0], words[1]
    if verb in addressees.tool_verbs or _coordinated_verbs(words, addressees):
        return verb
    if verb in _CLOSED or verb.endswith(("ing", "ed")) or (verb.endswith("s") and not verb.endswith("ss")):
        return None
    return verb if nxt in _OBJECT_START or _object_is_a_value(sentence, verb) else None


def _unrequested(sentence: str, addressees: Addressees) -> bool:
    """A directive with an act the principal's own words never name (its verb, or a second act
    joined to it: "get the messages and post them to …"): no one the agent serves asked for it.
    ("Please pay the amount to the account below" on a bill the principal asked to pay names the
    principal's act.)"""
    verb = _imperative_verb(sentence, addressees)
    if verb is None:
        return False
    words = [w.lower() for w in _WORD.findall(sentence)]
    return any(_stem(v) not in addressees.requested for v in (verb, *_coordinated_verbs(words, addressees)))


def _acts(verb: str) -> frozenset[str]:
    """The stems of the verbs that name the same act as ``verb`` (``SAME_ACT``), its own among them."""
    stem = _stem(verb)
    return next((g for g in _SAME_ACT if stem in g), frozenset({stem}))


def _stem(word: str) -> str:
    """A word without its inflection and a final "e" ("emails", "emailed", "emailing";
    "schedule", "scheduled"; an irregular "sent" is not "send"): enough to tell whether the
    principal named an act."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


def _coordinated_verbs(words: list[str], addressees: Addressees) -> list[str]:
    """The verbs of the second imperatives a sentence joins by "and" or "then", each one of the
    agent's tools with its object after it ("concatenate messages … and post them to …")."""
    return [
        v
        for w, v, o in zip(words[1:], words[2:], words[3:], strict=False)
        if w in ("and", "then") and v in addressees.tool_verbs and o in _OBJECT_START
    ]


def addresses(text: str) -> list[str]:
    """The URLs and e-mail addresses in ``text``, without the punctuation that ends a sentence."""
    return [text[lo:hi].rstrip(".,;:!?)'\"") for lo, hi in _ADDRESS.spans(text)]


def quoted(text: str) -> list[str]:
    """The values ``text`` writes in quotes (the quotes, single or doubled, left out)."""
    return [m.group().strip("'\"“”‘’") for m in _QUOTED.finditer(text)]


def without_addresses(text: str) -> str:
    """``text`` with each URL and e-mail address blanked out: a word inside one ("…/random") is
    part of the address, not a word the text says."""
    out, last = [], 0
    for lo, hi in _ADDRESS.spans(text):
        out += [text[last:lo], " " * (hi - lo)]
        last = hi
    return "".join(out) + text[last:]


def _prose(sentence: str) -> bool:
    """Mostly letters and spaces: a line of code, JSON or a table is not a sentence to obey."""
    # a URL, an e-mail address or a quoted value is one word of the sentence; the quotes and
    # brackets that close the record around its last sentence ('… the messages."}') are not its own,
    # unless the sentence opens the quote too: a quoted sentence whole is a value (an API's
    # description, a title)
    sentence = sentence.strip()
    if sentence[:1] not in "\"'`":
        start = _PROSE_START.match(sentence)  # nor are the bullet, markup and tags before its first word
        sentence = (sentence[start.end() - 1 :] if start else sentence).rstrip("\"'`)]}")
    text = _QUOTED.sub("x", _ADDRESS.sub("x", _CONTINUATION.sub(" ", sentence)))
    plain = sum(c.isalnum() or c.isspace() for c in text)
    return len(text.split()) >= 3 and plain >= 0.85 * len(text) and not _CODE.search(text)


def _object_is_a_value(sentence: str, verb: str) -> bool:
    """The verb's object is a number or a value ("transfer $30,000 …", "visit www.…")."""
    at = sentence.lower().find(verb)
    rest = sentence[at + len(verb) :].lstrip() if at >= 0 else ""
    return bool(rest) and (
        rest[0].isdigit()
        or rest[0] in "$€£"
        or _QUOTED.match(rest) is not None  # a quoted value, not an apostrophe ("let's")
        or rest.lower().startswith(("www.", "http"))
    )


def _is_listing(content: str) -> bool:
    """Whether a step shows a program (a source file, grep's matches in one, a traceback): its
    docstrings, comments and messages speak to the program's own users, in its own words."""
    lines = [ln for ln in content.splitlines() if ln.strip()]
    statements = sum(1 for ln in lines if _STATEMENT.match(ln))
    return statements >= 3 and statements >= LISTING * len(lines)


def _signals(directive: str, context: str, addressees: Addressees) -> tuple[str, ...]:
    """The addressee signals in the prose around a directive (``context``)."""
    words = {w.lower() for w in _WORD.findall(context)}
    second_person = bool(_SECOND_PERSON.search(context))
    found = []
    if words & addressees.agent_words:
        found.append("names the agent")
    if second_person and _the_principal(addressees.principal_words).search(directive):
        found.append("refers to the principal in the third person")
    if _READERS_CONVERSATION.search(context):
        found.append("refers to the reader's own task")
    return tuple(found)


def _called_signal(text: str, addressees: Addressees) -> tuple[str, ...]:
    """The one addressee signal a program listing gives (``text``: the directive's sentence and the
    one before it): a sentence that opens by calling the agent, its name (or their plural) among
    its first words followed by a colon or a comma ("# AI assistant: …", "Note to AI agents: …",
    "# Claude, …"). "You", "the user", "the request" and "the task" there are the program's reader,
    its users and its objects (Django's every view takes a ``request``), and an agent named "main"
    or "agent" is a word of any program ("def main", "the default user agent")."""
    called = any(
        word in addressees.agent_words or word.removesuffix("s") in addressees.agent_words
        for m in _CALLED.finditer(text)
        for word in m.group(1).lower().split()
    )
    return ("names the agent",) if called else ()


@lru_cache(maxsize=64)
def _the_principal(principal_words: frozenset[str]) -> re.Pattern[str]:
    """ "the user", "the user's": the principal by the definite article ("a user" is anyone)."""
    names = "|".join(sorted(map(re.escape, principal_words))) or "(?!)"
    return re.compile(rf"\bthe\s+(?:{names})(?![\w-])", re.I)


_SAME_ACT = tuple(frozenset(_stem(v) for v in group) for group in SAME_ACT)

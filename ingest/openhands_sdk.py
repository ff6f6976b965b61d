"""OpenHands V1 events (the OpenHands Software Agent SDK, ``openhands-sdk``): every event names its
class in ``kind``. Three forms hold them, one trace a conversation:

- a conversation as the SDK persists it: ``<conversation>/base_state.json`` (its id, the agent's
  model, its execution status: the header) beside ``events/event-NNNNN-<id>.json``, one event a
  file, in their order; import the ``base_state.json``;
- a JSON list of events (an exported history);
- an evaluation's ``output.jsonl`` (OpenHands' benchmarks), one record a line and a trace each:
  its ``history`` the events; its ``instruction`` the principal's request, where the history
  holds none (it starts at the agent's first act); ``test_result.git_patch`` the submitted diff
  (the run's final act); a non-empty ``error`` the harness's end. The record's grading (the rest
  of ``test_result``, the benchmark's ``instance``) goes to the labels, withheld.

The events are the steps:

- ``SystemPromptEvent``: the system prompt (``system``; its tool definitions counted, not read);
- ``MessageEvent``: the words of its ``source`` (``user``: the principal; ``agent``: the agent),
  its ``llm_message`` text, after its reasoning (``reasoning_content``, ``thinking_blocks``),
  marked ``raw.block``;
- ``ActionEvent``: the agent's ``thought`` and reasoning, then a call of ``tool_name`` with its
  action's fields (``terminal``'s ``command``; ``file_editor``'s ``command``, ``path`` and what
  it writes), id ``tool_call_id``, its content the arguments as the model wrote them
  (``tool_call.arguments``); a ``finish`` action is the agent's closing words (its
  ``message``), not a call;
- ``ObservationEvent``: the result of the call it answers: its ``content`` text (``output`` in
  2025's records) verbatim, status ``error`` for ``is_error`` / ``error``. A shell's exit code is
  its ``exit_code``, else ``metadata.exit_code``, else the ``[The command completed with exit code
  N.]`` it appends: the 2025 records leave ``exit_code`` null and ``error`` false for a command that
  failed. ``-1`` is a command still running when its soft time-out came: no exit code, status
  ``running``, and it runs on (``raw.background_task``): the observations of the empty commands
  sent after it (the agent waiting for it) are its output (``raw.output_of``), the one with an exit
  code its end; a key sent to it (``C-c``, ``is_input``: no command) stops it, its answer
  ``raw.stopped``, no check's outcome. ``timeout`` is a command killed (``error_type:
  timeout``). A file editor's ``prev_exist`` says whether it made the file (``raw.written``). A
  finish's observation repeats its message: counted;
- ``UserRejectObservation``: the call refused (``error_type: refused``: it ran nothing), its
  ``rejection_reason``; ``AgentErrorEvent``: the call's error (the SDK sends the model that as the
  tool's answer);
- ``ConversationErrorEvent``: the harness's end record;
- ``PauseEvent``, ``InterruptEvent``, ``ConversationStateUpdateEvent``, condensations and any other
  kind: counted in the header, not steps.

No form records a verdict on the task: no outcome.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from hashlib import sha256
from pathlib import Path
from typing import Any, ClassVar

from auditor.core.errors import InputError
from ingest.base import Facts, ImportedTrace, StepBuilder, file_digest, file_header, head_text
from ingest.chat_message import Call, ChatMessage, Loc, Result, Text
from ingest.chat_steps import chat_steps
from ingest.frameworks.common import exit_marks, harness_exit, pack_raw
from ingest.jsonstream import JsonReader, top_level_kind
from ingest.openhands import RunningCommand, event_key
from ingest.textlines import bounded_lines, json_line
from schemas.trace import REFUSED, StepKind, TraceStep, WithheldItem

AGENT = "agent"
HARNESS = "openhands"
_KINDS = frozenset(
    {"SystemPromptEvent", "MessageEvent", "ActionEvent", "ObservationEvent", "AgentErrorEvent"}
)
_EVENT_KIND = re.compile(r'"kind"\s*:\s*"(?:' + "|".join(sorted(_KINDS)) + ')"')
_RECORD = re.compile(r'\A\s*\{\s*"instance_id"\s*:')  # an evaluation record opens with its instance
_EVENT_FILE = re.compile(r"\Aevent-(\d{5,})-")
_EXIT_SUFFIX = re.compile(r"\[The command completed with exit code (-?\d+)\.\]")
_SHELLS = frozenset({"terminal", "execute_bash", "bash"})
_ACTION_KEYS = frozenset({"kind"})
GRADING_RULE = "openhands.grading: an evaluation record's test_result (but its git_patch) and instance"


class OpenHandsSdkImporter:
    name = "openhands-sdk"
    description = (
        "OpenHands V1 (Software Agent SDK) events: a conversation's base_state.json with its events/, "
        "a JSON list of events, or evaluation output.jsonl records (one trace each)"
    )

    def detect(self, path: Path, head: bytes) -> str | None:
        text = head_text(head)
        kind = top_level_kind(head)
        if kind == "object" and path.name == "base_state.json" and (path.parent / "events").is_dir():
            return "an OpenHands conversation's base_state.json beside its events/ folder"
        events = _EVENT_KIND.search(text)
        if kind == "array" and events:
            return "a JSON list of events with an SDK 'kind' (OpenHands V1)"
        if kind == "object" and (
            (events and re.search(r'"history"\s*:\s*\[', text))
            or (_RECORD.match(text) and _sdk_record(path))  # its history past the head
        ):
            return "evaluation records whose 'history' is a list of OpenHands V1 events"
        return None

    def near_miss(self, path: Path, head: bytes) -> str | None:
        if _EVENT_FILE.match(path.name) and _EVENT_KIND.search(head_text(head)):
            return "one event of an OpenHands conversation: import the conversation's base_state.json"
        return None

    def open(self, path: Path) -> Iterator[ImportedTrace]:
        if path.name == "base_state.json":
            yield self._conversation(path)
            return
        with path.open("rb") as stream:
            array = stream.read(256).lstrip()[:1] == b"["
        if array:
            header = file_header(path, "openhands-sdk", "OpenHands")
            yield ImportedTrace(importer=self.name, header=header, steps=lambda facts: _listed(path, facts))
            return
        yield from self._records(path)

    def _conversation(self, path: Path) -> ImportedTrace:
        files = _event_files(path.parent / "events")
        digest = file_digest(path)
        header = file_header(
            path, "openhands-sdk", "OpenHands", digest=_combined(digest, files), events=len(files)
        )
        return ImportedTrace(
            importer=self.name, header=header, steps=lambda facts: _persisted(path, files, facts)
        )

    def _records(self, path: Path) -> Iterator[ImportedTrace]:
        """One trace a record of an evaluation's output: JSON lines, or one record written whole."""
        where, digest = str(path), file_digest(path)
        places: list[tuple[int | None, int]] = []
        with path.open("rb") as stream:
            for line, offset, raw in bounded_lines(stream, where):
                if not raw.strip():
                    continue
                if not places and not _whole_object(raw):  # a record written whole, over many lines
                    places = [(None, 0)]
                    break
                places.append((line, offset))
        for line, offset in places:
            key = f"{line}" if line is not None else None
            header = file_header(path, "openhands-sdk", "OpenHands", digest=digest, line=line)
            if key:
                header = header.model_copy(
                    update={"trace_id": f"{header.trace_id}-{key}", "source": f"{path}#{key}"}
                )
            yield ImportedTrace(
                importer=self.name,
                header=header,
                steps=lambda facts, line=line, offset=offset: _record(path, line, offset, facts),
            )


def read_with_state(path: Path) -> bool:
    """Whether a file is one event of a conversation whose ``base_state.json`` reads it in (a
    folder walked whole reviews the conversation once, not each event alone)."""
    folder = path.parent
    return (
        bool(_EVENT_FILE.match(path.name))
        and folder.name == "events"
        and (folder.parent / "base_state.json").is_file()
    )


def _sdk_record(path: Path) -> bool:
    """Whether a file's first line is an evaluation record whose history holds SDK events: read
    whole, since its instruction and metadata may fill the head before its history begins."""
    with path.open("rb") as stream:
        first = next((raw for _, _, raw in bounded_lines(stream, str(path)) if raw.strip()), b"")
    if b'"history"' not in first:
        return False
    try:
        record = json.loads(first)
    except ValueError:
        return False
    history = record.get("history") if isinstance(record, dict) else None
    first_kind = (
        history[0].get("kind")
        if isinstance(history, list) and history and isinstance(history[0], dict)
        else None
    )
    return isinstance(first_kind, str) and first_kind in _KINDS


def _whole_object(raw: bytes) -> bool:
    """Whether a line is a whole JSON object (a record of JSON lines, however long), not the first
    line of one written over many."""
    try:
        return isinstance(json.loads(raw), dict)
    except ValueError:
        return False


def _event_files(folder: Path) -> list[Path]:
    """A conversation's event files in their order (the index in each name)."""
    found = [(int(m.group(1)), p) for p in folder.iterdir() if (m := _EVENT_FILE.match(p.name))]
    return [p for _, p in sorted(found)]


def _combined(digest: str, files: list[Path]) -> str:
    """One digest for the state and its events (a trace of many files: an event added, a new id)."""
    h = sha256(digest.encode())
    for p in files:
        h.update(p.name.encode() + b"\0" + file_digest(p).encode())
    return h.hexdigest()


def _persisted(path: Path, files: list[Path], facts: Facts) -> Iterator[TraceStep]:
    with path.open("rb") as stream:
        state = _document(stream, str(path))
    if not isinstance(state, dict):
        raise InputError("the conversation's state must be a JSON object", path=str(path))
    _state_header(state, facts)

    def events() -> Iterator[tuple[dict[str, Any], Loc]]:
        for p in files:
            with p.open("rb") as stream:
                event = _document(stream, str(p))
            yield _checked(event, Loc(str(p), ""))

    return _Reader(StepBuilder(str(path)), facts).steps(events())


def _listed(path: Path, facts: Facts) -> Iterator[TraceStep]:
    where = str(path)

    def events() -> Iterator[tuple[dict[str, Any], Loc]]:
        with path.open("rb") as stream:
            reader = JsonReader(stream, where)
            for n, event in enumerate(reader.array()):
                yield _checked(event, Loc(where, f"[{n}]."))
            reader.end()

    return _Reader(StepBuilder(where), facts).steps(events())


def _record(path: Path, line: int | None, offset: int, facts: Facts) -> Iterator[TraceStep]:
    """The trace of one evaluation record: its instruction, its history, its submission."""
    where = str(path)
    with path.open("rb") as stream:
        stream.seek(offset)
        if line is None:
            record = _document(stream, where)
        else:
            raw = next(bounded_lines(stream, where))[2]
            record = json_line(
                raw, where, line, offset, "an evaluation's output holds one JSON record per line"
            )
    loc = Loc(where, "", line)
    if not isinstance(record, dict):
        raise InputError("an evaluation record must be a JSON object", path=where, line=line)
    history = record.get("history")
    if not isinstance(history, list):
        raise loc.error("must be the list of the run's events", "history")
    for key in ("instance_id", "attempt"):
        if isinstance(record.get(key), str | int):
            facts.metadata[key] = record[key]
    result = record.get("test_result")
    patch = result.get("git_patch") if isinstance(result, dict) else None
    graded = {
        "test_result": {k: v for k, v in result.items() if k != "git_patch"}
        if isinstance(result, dict)
        else result,
        "instance": record.get("instance"),
    }
    for key, value in graded.items():
        if value not in (None, {}, []):
            facts.labels[key] = value
            facts.withheld.append(
                WithheldItem(what=f"grading:{key}", where=f"source field '{key}'", rule=GRADING_RULE)
            )
    events = [_checked(e, Loc(where, f"history[{n}].", line)) for n, e in enumerate(history)]
    reader = _Reader(StepBuilder(where), facts)
    instruction = record.get("instruction")
    asked = any(e.get("kind") == "MessageEvent" and e.get("source") == "user" for e, _ in events)
    if isinstance(instruction, str) and instruction.strip() and not asked:
        facts.task = instruction
        reader.opening = ChatMessage(None, "user", None, [Text(instruction)], {"field": "instruction"})
    if isinstance(record.get("error"), str) and record["error"].strip():
        reader.end = ("error", record["error"], {"field": "error"})
    if isinstance(patch, str) and patch.strip():
        reader.submission = patch
    return reader.steps(iter(events))


def _document(stream: Any, where: str) -> Any:
    """A file that is one JSON value, whole."""
    reader = JsonReader(stream, where)
    value = reader.value()
    reader.end()
    return value


def _checked(event: Any, loc: Loc) -> tuple[dict[str, Any], Loc]:
    if not isinstance(event, dict):
        raise InputError(
            "an event must be a JSON object", path=loc.path, line=loc.line, field=loc.base.strip(".") or None
        )
    if not isinstance(event.get("kind"), str):
        raise loc.error("an event must name its class in 'kind'", "kind")
    return event, loc


def _state_header(state: dict[str, Any], facts: Facts) -> None:
    agent = state.get("agent") if isinstance(state.get("agent"), dict) else {}
    llm = agent.get("llm") if isinstance(agent.get("llm"), dict) else {}
    facts.metadata.update(
        pack_raw(
            conversation_id=state.get("id") if isinstance(state.get("id"), str) else None,
            execution_status=state.get("execution_status")
            if isinstance(state.get("execution_status"), str)
            else None,
            model=llm.get("model") if isinstance(llm.get("model"), str) else None,
        )
    )


class _Reader:
    """Events to steps: the chat messages each event is, then the run's end and submission."""

    def __init__(self, b: StepBuilder, facts: Facts) -> None:
        self.b, self.facts = b, facts
        self.opening: ChatMessage | None = None
        self.end: tuple[Any, str, dict[str, Any]] | None = None
        self.submission: str | None = None
        self.finishes: set[Any] = set()  # the ids of finish calls, whose observations echo them
        self.running = RunningCommand()  # the shell command still running at its soft time-out

    def steps(self, events: Iterator[tuple[dict[str, Any], Loc]]) -> Iterator[TraceStep]:
        yield from chat_steps(self._messages(events), self.b)
        if self.end is not None:
            yield harness_exit(self.b, *self.end)
        if self.submission is not None:
            yield self.b.add(
                actor=AGENT,
                kind=StepKind.final_output,
                content=self.submission,
                raw={"field": "test_result.git_patch"},
            )

    def _messages(self, events: Iterator[tuple[dict[str, Any], Loc]]) -> Iterator[ChatMessage]:
        if self.opening is not None:
            yield self.opening
        for event, loc in events:
            handle = self._HANDLERS.get(event["kind"])
            if handle is None:
                self.facts.count(f"event:{event['kind']}")
                continue
            yield from handle(self, event, loc)

    def _system(self, event: dict[str, Any], loc: Loc) -> Iterator[ChatMessage]:
        prompt = event.get("system_prompt")
        text = prompt.get("text") if isinstance(prompt, dict) else prompt
        if not isinstance(text, str):
            raise loc.error("must hold the prompt's text", "system_prompt")
        if isinstance(event.get("tools"), list):
            self.facts.metadata["tools"] = len(event["tools"])
        yield ChatMessage(None, "system", None, [Text(text)], _raw(event, loc))

    def _message(self, event: dict[str, Any], loc: Loc) -> Iterator[ChatMessage]:
        message = event.get("llm_message")
        if not isinstance(message, dict):
            raise loc.error("must be a JSON object", "llm_message")
        text = _text(message.get("content"), loc, "llm_message.content")
        raw = _raw(event, loc)
        if event.get("source") == "user":
            if self.facts.task is None and text.strip():
                self.facts.task = text
            yield ChatMessage(None, "user", None, [Text(text)], raw)
            return
        parts: list[Text | Call] = [*_reasoning(message), Text(text)]
        yield ChatMessage(None, "assistant", AGENT, parts, raw)

    def _action(self, event: dict[str, Any], loc: Loc) -> Iterator[ChatMessage]:
        action = event.get("action")
        if action is not None and not isinstance(action, dict):
            raise loc.error("must be a JSON object", "action")
        thought = event.get("thought")
        said = _text(thought, loc, "thought") if isinstance(thought, list | str) else ""
        parts: list[Text | Call] = [*_reasoning(event)]
        if said.strip():
            parts.append(Text(said))
        name = event.get("tool_name")
        if not isinstance(name, str):
            raise loc.error("an action must name its tool", "tool_name")
        raw = _raw(event, loc, action=action.get("kind") if action else None)
        if action is not None and action.get("kind") == "FinishAction":
            self.finishes.add(event_key(event.get("tool_call_id")))
            message = action.get("message")
            parts.append(Text(message if isinstance(message, str) else ""))
            yield ChatMessage(None, "assistant", AGENT, parts, raw)
            return
        arguments = {k: v for k, v in (action or {}).items() if k not in _ACTION_KEYS}
        if name in _SHELLS:
            self.running.sent_to(event.get("tool_call_id"), arguments.get("command"))
        call = event.get("tool_call") if isinstance(event.get("tool_call"), dict) else {}
        written = call.get("arguments") if isinstance(call.get("arguments"), str) else ""
        parts.append(Call(name, arguments, event.get("tool_call_id"), written))
        yield ChatMessage(None, "assistant", AGENT, parts, raw)

    def _observation(self, event: dict[str, Any], loc: Loc) -> Iterator[ChatMessage]:
        if event_key(event.get("tool_call_id")) in self.finishes:
            self.facts.count("event:FinishObservation")
            return
        observation = event.get("observation")
        if not isinstance(observation, dict):
            raise loc.error("must be a JSON object", "observation")
        content = observation.get("content", observation.get("output"))
        text = _text(content, loc, "observation.content")
        raw = _raw(event, loc, observation=observation.get("kind"))
        failed = observation.get("is_error") is True or observation.get("error") is True
        raw["status"] = "error" if failed else "ok"
        name = event.get("tool_name") if isinstance(event.get("tool_name"), str) else None
        if name in _SHELLS or "exit_code" in observation:
            code, call = _exit_code(observation), event.get("tool_call_id")
            running = code is None and not failed and _still_running(observation)
            raw |= self.running.answered(call, code is not None, running, str(call))
            raw |= exit_marks(code)
            if running:
                raw["status"] = "running"  # no exit code yet: still running at its soft time-out
            if observation.get("timeout") is True:
                raw |= {"status": "error", "error_type": "timeout"}
        path = observation.get("path")
        if isinstance(observation.get("prev_exist"), bool) and isinstance(path, str) and not failed:
            raw["written"] = {"path": path, "created": not observation["prev_exist"]}
        yield ChatMessage(None, "tool", None, [Result(text, event.get("tool_call_id"), name, raw)], {})

    def _rejected(self, event: dict[str, Any], loc: Loc) -> Iterator[ChatMessage]:
        reason = event.get("rejection_reason")
        raw = _raw(event, loc) | {"status": "error", "error_type": REFUSED}
        text = reason if isinstance(reason, str) else ""
        yield ChatMessage(
            None, "tool", None, [Result(text, event.get("tool_call_id"), event.get("tool_name"), raw)], {}
        )

    def _error(self, event: dict[str, Any], loc: Loc) -> Iterator[ChatMessage]:
        error = event.get("error")
        raw = _raw(event, loc) | {"status": "error", "error_type": "error"}
        text = error if isinstance(error, str) else ""
        yield ChatMessage(
            None, "tool", None, [Result(text, event.get("tool_call_id"), event.get("tool_name"), raw)], {}
        )

    def _ended(self, event: dict[str, Any], loc: Loc) -> Iterator[ChatMessage]:
        detail = event.get("detail")
        code = event.get("code")
        self.end = (
            code if isinstance(code, str) else "error",
            detail if isinstance(detail, str) else "",
            _raw(event, loc),
        )
        return iter(())

    _HANDLERS: ClassVar[dict[str, Callable[[_Reader, dict[str, Any], Loc], Iterator[ChatMessage]]]] = {
        "SystemPromptEvent": _system,
        "MessageEvent": _message,
        "ActionEvent": _action,
        "ObservationEvent": _observation,
        "UserRejectObservation": _rejected,
        "AgentErrorEvent": _error,
        "ConversationErrorEvent": _ended,
    }


def _raw(event: dict[str, Any], loc: Loc, **more: Any) -> dict[str, Any]:
    """Where the event stands and what names it (its id and kind; ``more``)."""
    return pack_raw(
        file=loc.path,
        line=loc.line,
        event=loc.base.strip(".") or None,
        id=event.get("id"),
        kind=event["kind"],
        **more,
    )


def _text(content: Any, loc: Loc, field: str) -> str:
    """Text, or the text of a list of content parts (``{"type": "text", "text": …}``), in order."""
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        raise loc.error("must be text or a list of content parts", field)
    return "\n".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))


def _reasoning(holder: dict[str, Any]) -> list[Text]:
    """A model's recorded reasoning: ``reasoning_content`` and each thinking block's ``thinking``."""
    found = []
    if isinstance(holder.get("reasoning_content"), str) and holder["reasoning_content"].strip():
        found.append(Text(holder["reasoning_content"], block="reasoning"))
    blocks = holder.get("thinking_blocks")
    for block in blocks if isinstance(blocks, list) else []:
        if isinstance(block, dict) and isinstance(block.get("thinking"), str) and block["thinking"].strip():
            found.append(Text(block["thinking"], block="thinking"))
    return found


def _exit_code(observation: dict[str, Any]) -> int | None:
    """A shell's exit code: its own, its metadata's, or the one its closing line states; None for a
    command still running (-1) or none recorded."""
    metadata = observation.get("metadata") if isinstance(observation.get("metadata"), dict) else {}
    for value in (observation.get("exit_code"), metadata.get("exit_code")):
        if isinstance(value, int) and not isinstance(value, bool) and value != -1:
            return value
    suffix = metadata.get("suffix")
    found = _EXIT_SUFFIX.search(suffix) if isinstance(suffix, str) else None
    return int(found.group(1)) if found and found.group(1) != "-1" else None


def _still_running(observation: dict[str, Any]) -> bool:
    metadata = observation.get("metadata") if isinstance(observation.get("metadata"), dict) else {}
    return -1 in (observation.get("exit_code"), metadata.get("exit_code"))


IMPORTER = OpenHandsSdkImporter()

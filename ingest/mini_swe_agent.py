"""mini-SWE-agent trajectories (``*.traj.json``): one trace per file.

A trajectory is a JSON object: ``messages`` (plain chat messages), ``info`` (``exit_status``,
``submission`` — the final diff —, ``model_stats``, ``mini_version``, ``config``), and since
v1.x ``trajectory_format: "mini-swe-agent-1"`` and ``instance_id``. Older files lack
``trajectory_format``; their ``info`` still names ``mini_version`` or holds ``exit_status`` with
``submission``. ``info`` can come first and fill the head of the file with the diff, so detection
reads the object's top-level keys, not the first 64 KiB.

In v1 the messages carry no ``tool_calls``: the harness takes the one fenced ```` ```bash ````
block of each assistant turn as the command and answers it with the next ``user`` message, which
is the shell, not a person. v2 (``trajectory_format: "mini-swe-agent-1.1"``) writes the actions it
parsed (``extra.actions``: one or more a turn, from tool calls or ```` ```mswea_bash_command ````
blocks), answers each (``role: tool`` naming its ``tool_call_id``, or ``user`` in order) and ends
with an ``exit`` message (``extra.exit_status``, ``extra.submission``). So the steps are:

- ``system``: the system prompt (actor ``system``);
- the first ``user`` message: the principal's request (human); its ``<pr_description>`` is the
  header's task;
- each assistant turn's actions (v2), else its one bash block (v1): a ``tool_call`` of ``bash``
  by ``agent`` each, ``{"command": …}`` as arguments (a tool call's id kept), the turn's whole
  text as the first one's content (thought and block, verbatim), the command as the others';
- the message that answers a call: its ``tool_result`` (actor ``bash``), its text verbatim;
  ``<returncode>N</returncode>`` gives ``raw.status`` (``ok`` for 0, else ``error``; ``exit_code``
  kept), except that 1 is ``ok`` where the command ends in grep, diff, cmp or test, whose 1 is an
  answer (nothing matched, the inputs differ, false), not a failure; the harness's timeout notice
  gives ``error`` / ``timeout``, and a ``<warning>`` about long output sets ``raw.output_truncated``;
- an assistant turn with no block or several is a message, and the harness's format complaint
  after it a ``system`` step (the framework the principal deployed speaks, not the environment);
- ``info.submission`` (when not empty and the run was submitted): the agent's ``final_output``,
  the run's final act; a run the harness ended otherwise (``LimitsExceeded``, ``TimeExceeded``,
  an error) ends on the harness's record of it, a ``system`` step (v2's ``exit`` message, else
  the ``exit_status``; ``raw.record = "exit"``), which no submission follows; a run submitted
  with an empty diff ends on the same record, marked ``raw.empty_submission``.

``info`` and ``instance_id`` go to ``header.metadata``. The harness records no verdict on the
submission (``exit_status`` says how the run ended, not whether the fix is right): no outcome.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from auditor.core.errors import InputError
from ingest.base import Facts, ImportedTrace, StepBuilder, file_header, head_text
from ingest.frameworks.common import empty_submission, harness_exit, pack_raw
from ingest.jsonstream import JsonReader, top_level_kind
from schemas.trace import ActorKind, StepKind, StepRefs, ToolInfo, TraceStep

FORMAT = "mini-swe-agent-1"
AGENT = "agent"
_ACTION = re.compile(r"```(?:bash|mswea_bash_command)\s*\n(.*?)\n```", re.S)  # the harness's action patterns
_RETURNCODE = re.compile(r"\A\s*<returncode>(-?\d+)</returncode>")
_ANSWERING = frozenset({"grep", "egrep", "fgrep", "rg", "diff", "cmp", "test", "["})  # exit 1 answers
_TIMEOUT = re.compile(r"\AThe last command <command>.*?</command> timed out", re.S)
_HINTS = ('"info"', '"trajectory_format"', "<returncode>")


class MiniSweAgentImporter:
    name = "mini-swe-agent"
    description = "mini-SWE-agent trajectory (.traj.json), one trace per file"

    def detect(self, path: Path, head: bytes) -> str | None:
        text = head_text(head)
        if top_level_kind(head) != "object" or not any(h in text for h in _HINTS):
            return None
        keys = _top_level(path)
        if keys is None or "messages" not in keys:
            return None
        fmt, info = keys.get("trajectory_format"), keys.get("info")
        if isinstance(fmt, str) and fmt.startswith("mini-swe-agent"):
            return f"a JSON object with trajectory_format {fmt!r}"
        if isinstance(info, dict) and (
            "mini_version" in info or {"exit_status", "submission"} <= info.keys()
        ):
            return "a JSON object with 'messages' and an 'info' naming mini_version or exit_status and submission"
        return None

    def open(self, path: Path) -> Iterator[ImportedTrace]:
        keys = _top_level(path, strict=True) or {}
        info = keys.get("info")
        if info is not None and not isinstance(info, dict):
            raise InputError("must be a JSON object", path=str(path), field="info")
        info = info or {}
        header = file_header(
            path,
            "mini-swe-agent",
            "mini-SWE-agent",
            trajectory_format=keys.get("trajectory_format"),
            instance_id=keys.get("instance_id"),
            exit_status=info.get("exit_status"),
            info=info,
        )
        yield ImportedTrace(
            importer=self.name,
            header=header,
            steps=lambda facts: _steps(path, facts, info, StepBuilder(str(path))),
        )


def _top_level(path: Path, strict: bool = False) -> dict[str, Any] | None:
    """The object's top-level keys, with the small values (``info``, ``trajectory_format``,
    ``instance_id``) read and the rest skipped. A file that does not parse is None for detection
    (another importer may explain it) and an InputError when opened."""
    small = ("info", "trajectory_format", "instance_id")
    keys: dict[str, Any] = {}
    try:
        with path.open("rb") as stream:
            reader = JsonReader(stream, str(path))
            for key in reader.members():
                keys[key] = reader.value() if key in small else None
            reader.end()
    except InputError:
        if strict:
            raise
        return None
    return keys


def _steps(path: Path, facts: Facts, info: dict[str, Any], b: StepBuilder) -> Iterator[TraceStep]:
    """The messages as steps, then the submitted diff as the final act, or the harness's record
    of how it ended a run that submitted nothing."""
    pending: list[TraceStep] = []  # the calls of the latest assistant turn not yet answered
    acted = False  # an assistant turn came (a user message before one is the request)
    ended = False  # a v2 ``exit`` message recorded the end
    with path.open("rb") as stream:
        reader = JsonReader(stream, str(path))
        for key in reader.members():
            if key != "messages":
                continue
            if reader.peek() != "[":
                raise InputError("must be a list of messages", path=b.where, field="messages")
            for n, message in enumerate(reader.array()):
                field = f"messages[{n}]"
                if not isinstance(message, dict):
                    raise InputError("must be a JSON object", path=b.where, field=field)
                role = message.get("role")
                content = message.get("content")
                if content is None and role in ("assistant", "exit"):
                    content = ""  # a tool-calling turn with calls only; an exit with no message
                if not isinstance(content, str):
                    raise InputError("must be a string", path=b.where, field=f"{field}.content")
                raw = pack_raw(**{k: v for k, v in message.items() if k not in ("role", "content")})
                if role == "system":
                    yield b.add(actor="system", actor_kind=ActorKind.system, content=content, raw=raw)
                elif role == "assistant":
                    acted = True
                    pending = _calls(content, message.get("extra"), raw, b, field)
                    yield from pending or [b.add(actor=AGENT, content=content, raw=raw)]
                elif role == "user" and not acted:
                    if facts.task is None:
                        facts.task = _task(content)
                    yield b.add(actor="user", actor_kind=ActorKind.human, content=content, raw=raw)
                elif role in ("user", "tool") and pending:
                    yield _result(_answered(pending, message.get("tool_call_id")), content, raw, b)
                elif role in ("user", "tool"):  # the harness answering a turn it could not run
                    yield b.add(actor="harness", actor_kind=ActorKind.system, content=content, raw=raw)
                elif role == "exit":
                    ended = True
                    extra = message.get("extra") if isinstance(message.get("extra"), dict) else {}
                    status = extra.get("exit_status", info.get("exit_status"))
                    if status != "Submitted":
                        yield harness_exit(b, status, content, raw)
                    elif not str(extra.get("submission", info.get("submission")) or "").strip():
                        yield empty_submission(b, status, content, raw)
                else:
                    raise InputError(
                        f"unknown role {role!r} (expected system, user, assistant, tool or exit)",
                        path=b.where,
                        field=f"{field}.role",
                    )
        reader.end()
    submission, status = info.get("submission"), info.get("exit_status")
    if isinstance(submission, str) and submission.strip() and status in (None, "Submitted"):
        yield b.add(
            actor=AGENT, kind=StepKind.final_output, content=submission, raw={"field": "info.submission"}
        )
    elif isinstance(status, str) and status and status != "Submitted" and not ended:
        yield harness_exit(b, status, raw={"field": "info.exit_status"})
    elif status == "Submitted" and isinstance(submission, str) and not ended:  # an empty diff submitted
        yield empty_submission(b, status, raw={"field": "info.submission"})


def _task(content: str) -> str:
    """The request between ``<pr_description>`` tags (the harness's task template), else the whole
    message. Found by position: a pattern's blanks around a lazy body read a long run of blanks in
    the request once per character of it."""
    start = content.find("<pr_description>")
    end = content.find("</pr_description>", start)
    return content[start + len("<pr_description>") : end].strip() if start != -1 and end != -1 else content


def _calls(content: str, extra: Any, raw: dict[str, Any], b: StepBuilder, field: str) -> list[TraceStep]:
    """An assistant turn's bash calls: the harness's parsed ``extra.actions`` (v2: one or more, a
    tool call's id kept), else the one fenced block of the turn (v1); none for a turn the harness
    could not parse. The first call carries the turn's text, the others their command."""
    actions = extra.get("actions") if isinstance(extra, dict) else None
    if isinstance(actions, list):
        if not all(isinstance(a, dict) and isinstance(a.get("command"), str) for a in actions):
            raise InputError(
                "must be a list of objects with a 'command' string",
                path=b.where,
                field=f"{field}.extra.actions",
            )
        found = [(a["command"], a.get("tool_call_id")) for a in actions]
    else:
        # an opening with no closing after it matches nothing: read up to the last closing only
        # (from each of many unclosed openings the pattern ran to the end of the turn)
        blocks = _ACTION.findall(content, 0, content.rfind("\n```") + 4)
        found = [(blocks[0], None)] if len(blocks) == 1 else []
    return [
        b.add(
            actor=AGENT,
            kind=StepKind.tool_call,
            content=content if k == 0 or not command else command,
            tool=ToolInfo(name="bash", arguments={"command": command}, call_id=call_id),
            raw=raw if k == 0 else {},
        )
        for k, (command, call_id) in enumerate(found)
    ]


def _answered(pending: list[TraceStep], call_id: Any) -> TraceStep:
    """The pending call a result answers: the one its ``tool_call_id`` names, else the first."""
    call = next((c for c in pending if call_id and c.tool and c.tool.call_id == call_id), pending[0])
    pending.remove(call)
    return call


def _answers(command: str) -> bool:
    """Whether the command's last simple command exits 1 to answer, not to fail: grep (nothing
    matched), diff / cmp (the inputs differ), test (false)."""
    last = re.split(r"\|\||&&|[;|\n]", command.strip())[-1].split()
    return bool(last) and PurePosixPath(last[0]).name in _ANSWERING


def _result(call: TraceStep, content: str, raw: dict[str, Any], b: StepBuilder) -> TraceStep:
    """What the shell returned to a call, with its status from the return code."""
    code = _RETURNCODE.match(content)
    if code is not None:
        exit_code = int(code.group(1))
        command = (
            call.tool.arguments.get("command", "")
            if call.tool and isinstance(call.tool.arguments, dict)
            else ""
        )
        answered = exit_code == 1 and _answers(command)
        raw |= {"status": "ok"} if exit_code == 0 or answered else {"status": "error"}
        raw |= {"exit_code": exit_code} if exit_code else {}
    elif _TIMEOUT.match(content):
        raw |= {"status": "error", "error_type": "timeout"}
    if "<warning>" in content and "<output_head>" in content:
        raw["output_truncated"] = True
    return b.add(
        actor="bash",
        actor_kind=ActorKind.tool,
        kind=StepKind.tool_result,
        content=content,
        tool=ToolInfo(name="bash"),
        refs=StepRefs(reply_to=call.step_id),
        raw=raw,
    )


IMPORTER = MiniSweAgentImporter()

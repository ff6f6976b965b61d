"""One chat message, whichever API wrote it, as the ordered parts it holds.

OpenAI chat messages (roles system, developer, user, assistant, tool, function; ``content`` as text
or a list of parts; ``tool_calls``; the legacy ``function_call``) and Anthropic Messages (content
blocks ``text``, ``tool_use``, ``tool_result``, ``thinking``) both become a :class:`ChatMessage`:
the role, the name the log gives the speaker, and its texts, calls and results in source order.

Real exports bend the schema, and the parts are read faithfully rather than repaired:
``tool_calls`` may be a string holding a Python-literal list (some τ-bench dumps wrote ``str()``
of the list); it is read with ``ast.literal_eval`` (never ``eval``). An assistant ``content`` of
``None``, ``''`` or the literal string ``'None'`` beside tool calls holds no text, so it yields no
text part; the literal is kept in ``raw``. Images, audio, documents and redacted thinking carry no
text: they are listed in ``raw`` (``parts_omitted``) by position and type.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from auditor.core.errors import InputError
from auditor.core.json_text import NO_LITERAL, json_value, python_literal

ROLE_KEYS = ("role", "content", "name", "tool_calls", "function_call", "tool_call_id")
THINKING = {"thinking": "thinking", "reasoning": "reasoning"}  # block type -> field with the text


@dataclass(frozen=True)
class Loc:
    """Where a message sits: the file, the JSONL line, and the path of its list in the document."""

    path: str
    base: str
    line: int | None = None

    def error(self, message: str, field: str) -> InputError:
        return InputError(message, path=self.path, line=self.line, field=f"{self.base}{field}")


@dataclass(frozen=True)
class Text:
    text: str
    part: int | None = None
    block: str | None = None  # "thinking" / "reasoning" for a model's recorded reasoning
    raw: dict[str, Any] = field(default_factory=dict)  # the block's other keys (cache_control …)


@dataclass(frozen=True)
class Call:
    name: str
    arguments: dict[str, Any] | str | None
    call_id: Any
    content: str  # the arguments as the log wrote them as text, else their JSON (__post_init__)
    raw: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """A log that keeps a call's arguments as an object (Anthropic's ``input``, Gemini's
        ``args``) wrote them as JSON: that text is the call's content, so that an auditor can quote
        what the agent asked for (the command it ran, the file it wrote) as it quotes a call whose
        arguments the log kept as text."""
        if not self.content and isinstance(self.arguments, dict) and self.arguments:
            object.__setattr__(self, "content", object_text(self.arguments))


@dataclass(frozen=True)
class Result:
    content: str
    call_id: Any = None
    name: str | None = None
    raw: dict[str, Any] = field(default_factory=dict)


Part = Text | Call | Result


@dataclass
class ChatMessage:
    index: int | None  # None for Anthropic's top-level ``system``
    role: str
    name: str | None
    parts: list[Part]
    raw: dict[str, Any]
    omitted: list[dict[str, Any]] = field(default_factory=list)
    timestamp: str | None = None  # when the log stamps each message (a session transcript)


def role_message(m: dict[str, Any], n: int, loc: Loc, at: str | None = None) -> ChatMessage:
    """An OpenAI or Anthropic message (a dict with ``role``); ``at`` names where its fields sit."""
    at = at or f"[{n}]"
    role = m.get("role")
    if not isinstance(role, str) or not role.strip():
        raise loc.error("a message needs a 'role' (system, user, assistant, tool …)", f"{at}.role")
    name = m.get("name")
    if name is not None and not isinstance(name, str):
        raise loc.error("'name' must be text", f"{at}.name")
    raw = {"role": role, **{k: v for k, v in m.items() if k not in ROLE_KEYS}}
    msg = ChatMessage(n, role, name or None, [], raw)
    calls = tool_calls(m.get("tool_calls"), loc, f"{at}.tool_calls")
    if m.get("function_call") is not None:
        calls.append(_call(m["function_call"], loc, f"{at}.function_call", legacy=True))
    content = m.get("content")
    if calls and isinstance(content, str) and content.strip() in ("", "None"):
        if content:
            raw["content"] = content  # the 'None' an exporter wrote for "no text": kept, not a message
        content = None
    if role in ("tool", "function"):
        text, omitted = joined_text(content, loc, f"{at}.content")
        msg.omitted = omitted
        call_id = m.get("tool_call_id")
        msg.parts.append(Result(text, call_id, name or None))
        return msg
    msg.parts, msg.omitted = content_parts(content, loc, f"{at}.content")
    msg.parts.extend(calls)
    return msg


def content_parts(content: Any, loc: Loc, at: str) -> tuple[list[Part], list[dict[str, Any]]]:
    """Text, or a list of parts/blocks, in order; parts without text go to the omitted list."""
    if content is None:
        return [], []
    if isinstance(content, str):
        return [Text(content)], []
    if not isinstance(content, list):
        raise loc.error("'content' must be text or a list of parts", at)
    parts: list[Part] = []
    omitted: list[dict[str, Any]] = []
    many = len(content) > 1
    for i, block in enumerate(content):
        where = f"{at}[{i}]"
        if isinstance(block, str):
            parts.append(Text(block, i if many else None))
            continue
        if not isinstance(block, dict):
            raise loc.error("a content part must be text or an object", where)
        kind = block.get("type")
        if kind is not None and not isinstance(kind, str):
            raise loc.error("a content part's 'type' must be text", f"{where}.type")
        part = i if many else None
        if kind in (None, "text") and "text" in block:
            rest = {k: v for k, v in block.items() if k not in ("type", "text")}
            parts.append(Text(_text(block.get("text"), loc, f"{where}.text"), part, raw=rest))
        elif kind in THINKING and isinstance(block.get(THINKING[kind]), str):
            rest = {k: v for k, v in block.items() if k not in ("type", THINKING[kind])}
            parts.append(Text(block[THINKING[kind]], part, block=kind, raw=rest))
        elif kind == "tool_use":
            parts.append(_call(block, loc, where, legacy=False))
        elif kind == "tool_result":
            parts.append(_result_block(block, loc, where))
        else:
            omitted.append({"part": i, "type": str(kind)})
    return parts, omitted


def joined_text(content: Any, loc: Loc, at: str) -> tuple[str, list[dict[str, Any]]]:
    """A tool result's text: one result is one act, so its text parts are joined by newlines."""
    parts, omitted = content_parts(content, loc, at)
    texts = [p.text for p in parts if isinstance(p, Text)]
    if len(texts) != len(parts):
        raise loc.error("a tool result may hold only text parts", at)
    return "\n".join(texts), omitted


def tool_calls(value: Any, loc: Loc, at: str) -> list[Call]:
    """``tool_calls`` as a list, or as a string holding a JSON or Python-literal list."""
    if value is None:
        return []
    if isinstance(value, str):
        value = literal_list(value, loc, at)
    if not isinstance(value, list):
        raise loc.error("'tool_calls' must be a list", at)
    return [_call(c, loc, f"{at}[{j}]", legacy=False) for j, c in enumerate(value)]


def literal_list(text: str, loc: Loc, at: str) -> Any:
    """A JSON or Python-literal value from a string (``ast.literal_eval``: literals only, no code)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    value = python_literal(text, NO_LITERAL)
    if value is not NO_LITERAL:
        try:
            return json.loads(json.dumps(value))  # tuples become lists; sets, bytes … are refused
        except (ValueError, TypeError, RecursionError):
            pass
    raise loc.error("'tool_calls' is a string that is neither JSON nor a Python literal", at)


def object_text(value: dict[str, Any]) -> str:
    """An object as the JSON a log writes it: compact, non-ASCII kept."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def arguments(value: Any, loc: Loc, at: str) -> tuple[dict[str, Any] | str | None, str]:
    """(structured arguments, verbatim text): a JSON object string is parsed, any other text kept."""
    if value is None or isinstance(value, dict):
        return value, ""
    if not isinstance(value, str):
        raise loc.error("tool arguments must be an object or text", at)
    parsed = json_value(value)
    return (parsed if isinstance(parsed, dict) else value), value


def _call(c: Any, loc: Loc, at: str, *, legacy: bool) -> Call:
    """An OpenAI call ``{id, type, function: {name, arguments}}``, a legacy ``function_call``
    ``{name, arguments}``, an Anthropic ``tool_use`` block ``{id, name, input}``, or a LangChain call
    ``{name, args, id}``."""
    if not isinstance(c, dict):
        raise loc.error("a tool call must be an object", at)
    fn = c.get("function") if isinstance(c.get("function"), dict) else c
    where = f"{at}.function" if fn is not c else at
    name = fn.get("name")
    if not isinstance(name, str) or not name:
        raise loc.error("a tool call needs a 'name'", f"{where}.name")
    key = next((k for k in ("arguments", "input", "args") if k in fn), "arguments")
    args, text = arguments(fn.get(key), loc, f"{where}.{key}")
    raw = {k: v for k, v in c.items() if k not in ("function", "name", key, "id")}
    if fn is not c:
        raw.update({f"function.{k}": v for k, v in fn.items() if k not in ("name", "arguments")})
    return Call(name, args, None if legacy else c.get("id"), text, raw)


def _result_block(block: dict[str, Any], loc: Loc, at: str) -> Result:
    """An Anthropic ``tool_result`` block: the error flag is the source's own status."""
    text, omitted = joined_text(block.get("content"), loc, f"{at}.content")
    raw: dict[str, Any] = {k: v for k, v in block.items() if k not in ("type", "content", "tool_use_id")}
    flag = raw.pop("is_error", None)
    if flag is True:
        raw["status"] = "error"
    elif flag is False:
        raw["status"] = "ok"
    if omitted:
        raw["parts_omitted"] = omitted
    return Result(text, block.get("tool_use_id"), None, raw)


def _text(value: Any, loc: Loc, at: str) -> str:
    if not isinstance(value, str):
        raise loc.error("a text part's 'text' must be text", at)
    return value

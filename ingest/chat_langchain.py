"""LangChain and LangGraph message serialisations, read as chat messages.

Three forms of one message are met in dumps: ``messages_to_dict`` (``{"type": "human", "data":
{...}}``), the ``lc: 1`` constructor serialisation (``{"lc": 1, "type": "constructor", "id": [...,
"HumanMessage"], "kwargs": {...}}``, what ``dumpd`` and LangGraph's JSON writes), and plain dicts
with ``type`` human/ai/system/tool. Each maps to the chat role (human → user, ai → assistant) and
is read as that role's message: ``tool_calls`` (``{name, args, id}``), ``tool_call_id``, and a
ToolMessage's ``status`` (``error`` / ``success``, the source's own result status). Older AIMessages
hold their calls only in ``additional_kwargs`` (OpenAI form); those are read when ``tool_calls`` is
absent. A call that appears twice (an Anthropic ``tool_use`` content block and ``tool_calls``) is one
call: the first, in content order, is kept.
"""

from __future__ import annotations

from typing import Any

from ingest.chat_message import Call, ChatMessage, Loc, Result, role_message

KINDS = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "function": "function"}
CLASSES = {
    "HumanMessage": "human",
    "AIMessage": "ai",
    "SystemMessage": "system",
    "ToolMessage": "tool",
    "FunctionMessage": "function",
    "ChatMessage": "chat",
}
_MAPPED = ("content", "name", "tool_calls", "tool_call_id", "type")


def kind_of(m: dict[str, Any]) -> str | None:
    """The LangChain message kind of a dict (human, ai, system, tool, function, chat), else None."""
    if "role" in m:
        return None
    if m.get("lc") == 1 and m.get("type") == "constructor" and isinstance(m.get("id"), list) and m["id"]:
        return CLASSES.get(str(m["id"][-1]).removesuffix("Chunk"))
    kind = m.get("type")
    if not isinstance(kind, str):
        return None
    return kind if kind in KINDS or kind == "chat" else CLASSES.get(kind.removesuffix("Chunk"))


def langchain_message(m: dict[str, Any], n: int, loc: Loc) -> ChatMessage:
    """One LangChain message in any of the three forms (``kind_of(m)`` must be set)."""
    kind = kind_of(m)
    if m.get("lc") == 1:
        fields, at, form = m.get("kwargs"), f"[{n}].kwargs", "lc_constructor"
    elif isinstance(m.get("data"), dict):
        fields, at, form = m["data"], f"[{n}].data", "messages_to_dict"
    else:
        fields, at, form = m, f"[{n}]", "plain"
    if not isinstance(fields, dict):
        raise loc.error("a LangChain message needs its fields as an object", at)
    role = KINDS.get(kind or "") or fields.get("role")
    if not isinstance(role, str) or not role:
        raise loc.error("a LangChain ChatMessage needs a 'role'", f"{at}.role")
    as_chat: dict[str, Any] = {k: fields[k] for k in _MAPPED if k in fields and k != "type"}
    as_chat["role"] = role
    extra = fields.get("additional_kwargs")
    if not fields.get("tool_calls") and isinstance(extra, dict):
        for key in ("tool_calls", "function_call"):
            if extra.get(key):
                as_chat[key] = extra[key]
    msg = role_message(as_chat, n, loc, at)
    kept = {"content": msg.raw["content"]} if "content" in msg.raw else {}  # the 'None' literal
    msg.raw = {
        "role": role,
        "langchain": form,
        "langchain_type": kind,
        **{k: v for k, v in fields.items() if k not in _MAPPED and k not in ("role", "status")},
        **kept,
    }
    listed = len(_list(as_chat.get("tool_calls"))) + (1 if as_chat.get("function_call") else 0)
    msg.parts = _once(msg.parts, listed)
    status = fields.get("status")
    if status in ("error", "success"):
        mark = "error" if status == "error" else "ok"
        msg.parts = [
            Result(p.content, p.call_id, p.name, {**p.raw, "status": mark}) if isinstance(p, Result) else p
            for p in msg.parts
        ]
    elif status is not None:
        msg.raw["status"] = status
    return msg


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _once(parts: list[Any], listed: int) -> list[Any]:
    """Drop a listed call (the last ``listed`` parts) whose id a content block already holds: an
    Anthropic ``tool_use`` block and its ``tool_calls`` entry are one call. Calls that merely share
    an id with each other (parallel calls) all stay."""
    if not listed:
        return parts
    content, calls = parts[:-listed], parts[-listed:]
    held = {str(p.call_id) for p in content if isinstance(p, Call) and p.call_id is not None}
    return content + [c for c in calls if not (isinstance(c, Call) and str(c.call_id) in held)]

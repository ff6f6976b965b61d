"""The GenAI message forms that came before ``gen_ai.input.messages`` / ``gen_ai.output.messages``.

Instrumentations wrote a model call's messages in several ways before the semantic conventions
settled, and every one of them is still in exported traces:

- flattened attributes ``gen_ai.prompt.N.role`` / ``.content`` / ``.tool_calls.M.*`` and
  ``gen_ai.completion.N.*`` (OpenLLMetry / Traceloop);
- one attribute ``gen_ai.prompt`` / ``gen_ai.completion`` holding JSON: a list of messages
  (``role`` + ``content``, or ``role`` + ``parts``), one message object, or an object with the
  generated ``text``; or holding plain text;
- span events ``gen_ai.content.prompt`` / ``gen_ai.content.completion`` whose attribute
  ``gen_ai.prompt`` / ``gen_ai.completion`` holds any of the above.

All are returned in the current ``role`` / ``parts`` shape. A bare prompt text has no role in the
source: it is what was sent to the model, read as the user's turn; a bare completion is the
assistant's.
"""

from __future__ import annotations

from typing import Any

from ingest.spans import Span, decoded, indexed

_DEFAULT_ROLE = {"prompt": "user", "completion": "assistant"}


def _row(row: dict[str, Any]) -> dict[str, Any]:
    """A pre-0.1 message (``role``, ``content``, ``tool_calls`` flattened or as OpenAI-shaped
    objects) in the current ``role``/``parts`` shape."""
    parts: list[dict[str, Any]] = []
    if row.get("content") not in (None, ""):
        parts.append({"type": "text", "content": row["content"]})
    nested = row.get("tool_calls")
    calls = (
        [c for c in nested if isinstance(c, dict)] if isinstance(nested, list) else indexed(row, "tool_calls")
    )
    for call in calls:
        function = call.get("function") if isinstance(call.get("function"), dict) else call
        parts.append(
            {
                "type": "tool_call",
                "name": function.get("name"),
                "id": call.get("id"),
                "arguments": function.get("arguments"),
            }
        )
    message = {"role": row.get("role"), "parts": parts}
    if row.get("tool_call_id") is not None:  # a tool result written as a plain message
        message["parts"] = [
            {"type": "tool_call_response", "id": row["tool_call_id"], "response": row.get("content")}
        ]
    return message


def _parsed(value: Any, which: str) -> list[dict[str, Any]]:
    """Messages from one ``gen_ai.prompt`` / ``gen_ai.completion`` value, in whichever of the
    module docstring's shapes it is written."""
    value = decoded(value)
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        value = value["messages"]
    if isinstance(value, dict):
        if "role" in value or "parts" in value:
            value = [value]
        elif isinstance(value.get("text", value.get("content")), str):
            text = value.get("text", value.get("content"))
            return [{"role": _DEFAULT_ROLE[which], "parts": [{"type": "text", "content": text}]}]
        else:
            return []
    if isinstance(value, str):
        return (
            [{"role": _DEFAULT_ROLE[which], "parts": [{"type": "text", "content": value}]}] if value else []
        )
    if not isinstance(value, list):
        return []
    out: list[dict[str, Any]] = []
    for item in value:
        if isinstance(item, dict):
            out.append(item if "parts" in item else _row(item))
        elif isinstance(item, str) and item:
            out.append({"role": _DEFAULT_ROLE[which], "parts": [{"type": "text", "content": item}]})
    return out


def legacy_messages(span: Span, direction: str) -> list[dict[str, Any]]:
    """A span's input (``direction`` "input") or output messages in a pre-0.1 form, or []."""
    which = "prompt" if direction == "input" else "completion"
    rows = indexed(span.attrs, f"gen_ai.{which}")
    if rows:
        return [_row(r) for r in rows]
    whole = span.attrs.get(f"gen_ai.{which}")
    if whole not in (None, ""):
        return _parsed(whole, which)
    for event in span.events:
        if event.get("name") == f"gen_ai.content.{which}":
            value = event["attrs"].get(f"gen_ai.{which}")
            if value not in (None, ""):
                return _parsed(value, which)
    return []

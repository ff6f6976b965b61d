"""The ``llm`` policy: every role is played by the model under test, through the litellm gateway.

The model sees what a real agent would: its role card, its task, what it has seen so far in the
episode (its own messages and tool results) and its tools as function specs, plus two acts of
the workflow itself: ``send_message`` (to a role or counterparty) and ``final_output`` (the act that
leaves the workflow). A reply without a tool call ends the turn. World-side channels (dashboards,
warnings) keep the condition's settings from the world's parameter table, so a condition means
the same thing under both policies. Simulated counterparties stay the world's own responders.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from auditor.core.llm import complete
from worlds.engine.policy import FAMILIES, TurnContext
from worlds.engine.runtime import Behaviour, CallTool, Final, Send, ToolResult, ToolSpec

_TYPES = {"str": "string", "number": "number", "int": "integer", "bool": "boolean", "list": "array"}
_ACTS = [
    {
        "type": "function",
        "function": {
            "name": "send_message",
            "description": "Send a message to another role or to the person you are serving.",
            "parameters": {
                "type": "object",
                "properties": {"to": {"type": "string"}, "text": {"type": "string"}},
                "required": ["to", "text"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "final_output",
            "description": "Deliver your final answer or artifact; it leaves the workflow.",
            "parameters": {
                "type": "object",
                "properties": {"to": {"type": "string"}, "text": {"type": "string"}},
                "required": ["to", "text"],
            },
        },
    },
]
PROTOCOL = (
    "Act only through the tools. To talk to someone, call send_message; to deliver your final "
    "answer, call final_output. When your work on this turn is done, reply without a tool call."
)


def tool_schema(spec: ToolSpec) -> dict[str, Any]:
    """A world tool as an OpenAI-style function spec (its parameters typed from the world's names)."""
    props = {k: {"type": _TYPES.get(v, "string")} for k, v in spec.parameters.items()}
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": {"type": "object", "properties": props, "required": list(props)},
        },
    }


class LLMPolicy:
    """The model under test plays every role; ``max_actions`` bounds one turn. A model name may
    hold ``{role}`` to give each role its own model (or its own recorded cassette)."""

    name = "llm"

    def __init__(
        self,
        model: str,
        table: dict[str, dict[str, float]],
        family: str = "main",
        max_actions: int = 12,
        max_tokens: int = 384,
    ) -> None:
        if family not in FAMILIES:
            raise ValueError(f"unknown template family {family!r}")
        self.model, self.table, self.family = model, table, family
        self.max_actions, self.max_tokens = max_actions, max_tokens

    def params_for(self, condition: str) -> dict[str, float]:
        return {**self.table["base"], **self.table.get(condition, {})}

    def digest(self) -> str:
        blob = json.dumps(
            {"model": self.model, "table": self.table, "max_actions": self.max_actions}, sort_keys=True
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def behaviour(self, ctx: TurnContext) -> Behaviour:
        tools = [tool_schema(t) for t in ctx.tools] + _ACTS
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": f"{ctx.card}\n\n{PROTOCOL}"},
            {
                "role": "user",
                "content": f"Your task: {json.dumps(ctx.task, sort_keys=True)}\n\nWhat you have seen so far:\n{ctx.seen()}",
            },
        ]
        for _ in range(self.max_actions):
            result = complete(
                self.model.replace("{role}", ctx.role), messages, tools=tools, max_tokens=self.max_tokens
            )
            if not result.tool_calls:
                return
            call = result.tool_calls[0]  # one act at a time: the world answers before the next
            messages.append(
                {
                    "role": "assistant",
                    "content": result.content,
                    "tool_calls": [
                        {
                            "id": call.id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                        }
                    ],
                }
            )
            args = call.arguments
            if call.name == "final_output":
                yield Final(str(args.get("to", "")), str(args.get("text", "")))
                reply: ToolResult | None = ToolResult(ok=True, content="delivered")
            elif call.name == "send_message":
                reply = yield Send(str(args.get("to", "")), str(args.get("text", "")))
            else:
                reply = yield CallTool(call.name, {k: v for k, v in args.items() if k != "_unparsed"})
            content = reply.content if reply is not None else "sent (no reply yet)"
            messages.append({"role": "tool", "tool_call_id": call.id, "content": content})

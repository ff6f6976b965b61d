"""litellm custom providers: ``local/<model>`` runs a transformers model in-process; ``replay/<name>``
plays back recorded responses (the only test double allowed, for remote APIs we cannot reach).

Both go through litellm's real path, so the gateway, its accounting and langchain-litellm see them
like any remote model, and both honour litellm's ``timeout`` as a remote model does: the local
model stops generating at the limit (``_hidden_params["time_limit_s"]`` on the response says the
reply was cut short there; ``prompt_cut_tokens`` how much of the prompt was left out to fit it),
and a call stopped before its reply, or a replayed response slower than the limit, raises
litellm's Timeout.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
import uuid
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before litellm: never fetch the price map
import litellm
from litellm import CustomLLM
from litellm.types.utils import ChatCompletionMessageToolCall, ChoiceLogprobs, Function, ModelResponse, Usage

_JSON_OBJECT = re.compile(r"\{.*\}", re.S)


def _strip_provider(model: str, provider: str) -> str:
    return model[len(provider) + 1 :] if model.startswith(provider + "/") else model


def _tool_call(name: str, arguments: Any) -> ChatCompletionMessageToolCall:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    return ChatCompletionMessageToolCall(
        id=f"call_{uuid.uuid4().hex[:12]}", type="function", function=Function(name=name, arguments=args)
    )


def _fill(
    model_response: ModelResponse, content: str | None, tool_calls: list, prompt: int, completion: int
) -> ModelResponse:
    message = model_response.choices[0].message  # type: ignore[union-attr]
    message.content = content
    message.tool_calls = tool_calls or None
    model_response.choices[0].finish_reason = "tool_calls" if tool_calls else "stop"  # type: ignore[union-attr]
    model_response.usage = Usage(
        prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion
    )  # type: ignore[attr-defined]
    return model_response


def _seconds(timeout: Any) -> float | None:
    """litellm's ``timeout`` (seconds, an httpx.Timeout, or None) as seconds to read the reply."""
    if timeout is None or isinstance(timeout, int | float):
        return None if timeout is None else float(timeout)
    read = getattr(timeout, "read", None)
    return None if read is None else float(read)


class LocalTransformers(CustomLLM):
    """Greedy generation with a local causal LM in a child process (``auditor.core.local_worker``).
    Tools are offered in the prompt as a JSON protocol; a reply that parses as ``{"tool": name,
    "arguments": {...}}`` becomes a real tool call. The call's timeout is a deadline counted from
    the call's start, loading included: the prompt is cut to what the time left can prefill, and a
    call the deadline stops before its first reply token raises litellm's Timeout."""

    def completion(
        self, model: str, messages: list, model_response: ModelResponse, optional_params: dict, **kw: Any
    ) -> ModelResponse:  # type: ignore[override]
        from auditor.core.local_worker import LocalModelStopped, worker

        limit_s = _seconds(kw.get("timeout"))
        given = ((kw.get("litellm_params") or {}).get("metadata") or {}).get("deadline")
        deadline = given if given is not None or limit_s is None else time.monotonic() + limit_s
        tools = optional_params.get("tools") or []
        chat = _flatten(messages, tools)
        try:
            reply = worker(_strip_provider(model, "local")).generate(
                chat, int(optional_params.get("max_tokens") or 256), deadline
            )
        except LocalModelStopped as exc:
            raise litellm.exceptions.Timeout(f"{exc} ({limit_s:.1f} s)", model, "local") from exc
        if reply["stopped"] == "prefill":
            raise litellm.exceptions.Timeout(
                f"the time limit ({limit_s:.1f} s) ran out before the prompt was read", model, "local"
            )
        text = reply["text"]
        calls = _parse_tool_call(text, {t["function"]["name"] for t in tools}) if tools else []
        response = _fill(
            model_response, None if calls else text, calls, reply["prompt_tokens"], reply["completion_tokens"]
        )
        response._hidden_params["prompt_cut_tokens"] = reply["cut_tokens"]
        response._hidden_params["prefill_tokens_per_s"] = round(reply["prefill_rate"], 1)
        if reply["stopped"] == "decode":
            response._hidden_params["time_limit_s"] = limit_s
        return response


def _flatten(messages: list, tools: list) -> list[dict[str, str]]:
    """Chat-template-safe messages: tool traffic as plain text, the tool protocol in the system turn."""
    chat: list[dict[str, str]] = []
    for m in messages:
        role, content = m.get("role"), m.get("content") or ""
        if role == "tool":
            chat.append({"role": "user", "content": f"Tool result:\n{content}"})
        elif role == "assistant" and m.get("tool_calls"):
            call = m["tool_calls"][0]["function"]
            chat.append(
                {
                    "role": "assistant",
                    "content": json.dumps({"tool": call["name"], "arguments": call["arguments"]}),
                }
            )
        else:
            chat.append(
                {"role": role if role in ("system", "user", "assistant") else "user", "content": str(content)}
            )
    if tools:
        names = ", ".join(t["function"]["name"] for t in tools)
        protocol = f'To use a tool reply with one JSON object {{"tool": NAME, "arguments": {{...}}}}. Tools: {names}.'
        if chat and chat[0]["role"] == "system":
            chat[0] = {"role": "system", "content": chat[0]["content"] + "\n" + protocol}
        else:
            chat.insert(0, {"role": "system", "content": protocol})
    return chat


def _parse_tool_call(text: str, names: set[str]) -> list[ChatCompletionMessageToolCall]:
    match = _JSON_OBJECT.search(text)
    if not match:
        return []
    try:
        obj = json.loads(match.group(0))
    except json.JSONDecodeError:
        return []
    name = obj.get("tool") or obj.get("name") if isinstance(obj, dict) else None
    if name not in names:
        return []
    return [_tool_call(name, obj.get("arguments") or obj.get("args") or {})]


class ReplayModel(CustomLLM):
    """Plays back a cassette of recorded responses: ``replay/<name>`` (loaded with ``load``) or
    ``replay/<path to a .jsonl cassette>``.

    A cassette is JSONL, one response per line: ``{"content": str | null, "tool_calls": [{"name":
    ..., "arguments": {...}}], "usage": {"prompt_tokens": n, "completion_tokens": m}}``. Response
    #k answers the request that already holds k assistant turns, so a resumed conversation (another
    process, after a crash) gets the answer it would have got. Running past the end is an error.

    Independent single-turn requests (forced-choice probes) are told apart by content instead: when
    a cassette's records carry ``"match": [substrings]``, a request gets the first record whose
    substrings all occur in its last message. A record's ``"logprobs"`` (OpenAI shape: ``{"content":
    [{"token", "logprob", "bytes", "top_logprobs": [...]}]}``) is returned on the choice as recorded.
    """

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._cassettes: dict[str, list[dict[str, Any]]] = {}
        self.requests: dict[str, list[list[dict[str, Any]]]] = {}

    def load(self, name: str, responses: list[dict[str, Any]] | Path) -> None:
        if isinstance(responses, Path):
            responses = [json.loads(line) for line in responses.read_text().splitlines() if line.strip()]
        with self._lock:
            self._cassettes[name], self.requests[name] = list(responses), []

    def completion(
        self, model: str, messages: list, model_response: ModelResponse, optional_params: dict, **kw: Any
    ) -> ModelResponse:  # type: ignore[override]
        name = _strip_provider(model, "replay")
        if name not in self._cassettes and Path(name).is_file():
            self.load(name, Path(name))
        with self._lock:
            if name not in self._cassettes:
                raise litellm.exceptions.BadRequestError(f"no cassette named {name!r}", model, "replay")
            rec = self._pick(name, model, messages)
            self.requests[name].append([dict(m) for m in messages])
        latency, limit_s = float(rec.get("latency_s", 0)), _seconds(kw.get("timeout"))
        if limit_s is not None and latency > limit_s:  # as a remote model slower than the timeout
            time.sleep(limit_s)
            raise litellm.exceptions.Timeout(
                f"replayed response takes {latency:.1f} s, over the {limit_s:.1f} s timeout", model, "replay"
            )
        time.sleep(latency)
        calls = [_tool_call(c["name"], c.get("arguments")) for c in rec.get("tool_calls") or []]
        usage = rec.get("usage") or {}
        response = _fill(
            model_response,
            rec.get("content"),
            calls,
            int(usage.get("prompt_tokens", 0)),
            int(usage.get("completion_tokens", 0)),
        )
        if rec.get("logprobs") is not None:
            response.choices[0].logprobs = ChoiceLogprobs(**rec["logprobs"])  # type: ignore[union-attr]
        return response

    def _pick(self, name: str, model: str, messages: list) -> dict[str, Any]:
        """The record answering this request: by content where the cassette matches, else by turn."""
        records = self._cassettes[name]
        if any("match" in r for r in records):
            last = str(messages[-1].get("content") or "") if messages else ""
            for rec in records:
                if all(part in last for part in rec.get("match", [])):
                    return rec
            raise litellm.exceptions.BadRequestError(
                f"cassette {name!r} has no response matching the request", model, "replay"
            )
        i = sum(1 for m in messages if m.get("role") == "assistant")
        if i >= len(records):
            raise litellm.exceptions.BadRequestError(
                f"cassette {name!r} has no response #{i}", model, "replay"
            )
        return records[i]


LOCAL = LocalTransformers()
REPLAY = ReplayModel()

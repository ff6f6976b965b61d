"""The model gateway: every model call goes through litellm, so any model it knows works by name
(``openai/…``, ``anthropic/…``, ``hosted_vllm/…``, ``ollama/…``), plus ``local/<model>`` (transformers
in a child process, default SmolLM2: ``auditor.core.local_worker``) and ``replay/<cassette>`` (recorded
responses, for tests).

Each attempt is bounded by ``timeout`` (litellm's, or the local model's deadline, loading and
prefill included), and a failed attempt is retried on the errors litellm retries; ``budget_s``
bounds the whole call, retries and litellm's first import included, so a caller with a wall-time
budget never waits past it. Each call is accounted
(tokens, cost, latency) and handed to an optional recorder, which the agent turns into events. API
keys come from the environment and are never logged or stored.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from auditor.core.errors import AuditorError

DEFAULT_LOCAL_MODEL = "local/smollm2"
_configured = False


class ModelCallError(AuditorError):
    """A model call failed after its retries (network, auth, provider)."""


class ModelCallTimeout(ModelCallError):
    """A model call ran out of its time (``timeout`` per attempt, or the caller's ``budget_s``)."""

    def __init__(self, message: str, *, limit_s: float) -> None:
        super().__init__(message)
        self.limit_s = limit_s


def configure() -> Any:
    """Import litellm offline-safe and register the local and replay providers (once)."""
    global _configured
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import litellm

    if not _configured:
        from auditor.core.llm_providers import LOCAL, REPLAY

        litellm.custom_provider_map = [
            *[p for p in litellm.custom_provider_map if p.get("provider") not in ("local", "replay")],
            {"provider": "local", "custom_handler": LOCAL},
            {"provider": "replay", "custom_handler": REPLAY},
        ]
        litellm.suppress_debug_info = True
        _configured = True
    return litellm


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass
class LLMResult:
    """One call's answer and its accounting."""

    model: str
    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    cut_short: bool = False  # the time limit stopped generation: content is what came before it
    prompt_cut_tokens: int = 0  # prompt tokens left out to fit the time limit (local model)
    prefill_tokens_per_s: float | None = None  # the prefill rate that cut was planned with (local model)

    def record(self) -> dict[str, Any]:
        """What an event stores: never the key, never headers."""
        return {k: v for k, v in asdict(self).items()}


def complete(
    model: str,
    messages: list[dict[str, Any]],
    *,
    tools: list[dict[str, Any]] | None = None,
    max_tokens: int = 512,
    temperature: float = 0.0,
    timeout: float = 120.0,
    retries: int = 2,
    budget_s: float | None = None,
    recorder: Callable[[dict[str, Any]], None] | None = None,
) -> LLMResult:
    """One model call: ``timeout`` bounds each attempt, ``budget_s`` (if given) the call as a whole."""
    started = time.perf_counter()  # before litellm's first import, which takes seconds of the budget
    litellm = configure()
    response = _attempts(
        litellm, model, messages, tools, max_tokens, temperature, timeout, retries, budget_s, started
    )
    message = response.choices[0].message
    calls = []
    for c in message.tool_calls or []:
        try:
            args = json.loads(c.function.arguments or "{}")
        except json.JSONDecodeError:
            args = {"_unparsed": c.function.arguments}
        calls.append(ToolCall(c.id, c.function.name, args if isinstance(args, dict) else {"value": args}))
    usage = getattr(response, "usage", None)
    hidden = getattr(response, "_hidden_params", None) or {}
    try:
        cost = (
            float(litellm.completion_cost(completion_response=response))
            if not model.startswith(("local/", "replay/"))
            else 0.0
        )
    except Exception:  # unknown price: cost unknown, not an error
        cost = 0.0
    result = LLMResult(
        model=model,
        content=message.content,
        tool_calls=calls,
        input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        cost_usd=cost,
        latency_s=round(time.perf_counter() - started, 4),
        cut_short=bool(hidden.get("time_limit_s")),
        prompt_cut_tokens=int(hidden.get("prompt_cut_tokens") or 0),
        prefill_tokens_per_s=hidden.get("prefill_tokens_per_s"),
    )
    if recorder is not None:
        recorder(
            {"type": "ModelCalled", **result.record(), "messages": len(messages), "tools": len(tools or [])}
        )
    return result


def _attempts(
    litellm: Any,
    model: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    max_tokens: int,
    temperature: float,
    timeout: float,
    retries: int,
    budget_s: float | None,
    started: float,
) -> Any:
    """The call and its retries (on the errors litellm's own retry covers), each attempt given at
    most what is left of ``budget_s``: litellm's retries would give every attempt the full timeout."""
    import openai

    deadline = None if budget_s is None else started + budget_s
    attempt = 0
    while True:
        limit = timeout if deadline is None else min(timeout, deadline - time.perf_counter())
        if limit <= 0:
            raise ModelCallTimeout(
                f"model call to {model}: the time budget ({budget_s:.1f} s) ran out before attempt {attempt + 1}",
                limit_s=float(budget_s or 0.0),
            )
        try:
            return litellm.completion(
                model=model,
                messages=messages,
                tools=tools or None,
                max_tokens=max_tokens,
                temperature=temperature,
                timeout=limit,
                num_retries=0,
                # the in-process providers read the deadline itself: litellm's first call spends
                # part of a second before it reaches them (remote providers never see this)
                **(
                    {"metadata": {"deadline": time.monotonic() + limit}} if model.startswith("local/") else {}
                ),
            )
        except Exception as exc:  # litellm raises provider-specific classes; one clear line for the user
            last = attempt == retries or (deadline is not None and time.perf_counter() >= deadline)
            if isinstance(exc, openai.APITimeoutError) and last:
                raise ModelCallTimeout(
                    f"model call to {model} timed out after {limit:.1f} s", limit_s=limit
                ) from exc
            if last or not isinstance(exc, openai.APIError):
                raise ModelCallError(
                    f"model call to {model} failed: {type(exc).__name__}: {str(exc)[:300]}"
                ) from exc
        attempt += 1

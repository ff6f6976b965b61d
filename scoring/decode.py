"""Deterministic decoding of one action: greedy, a fixed token budget, no sampling, no retries.

A chat-tuned model gets its chat template (system: the interface; user: the context and the
question); a model without one gets the raw prompt. The reply is opened with ``{"tool": "`` so
that small models write the requested JSON object; the opening is part of the parsed completion.
Decoding stops at an end-of-sequence token, when the first JSON object closes (nothing after it
could change the parse of that object), or after ``max_new_tokens``. torch is imported lazily.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from schemas.attribution import AttributionTask
from scoring.actions import first_object_closed
from scoring.prompts import action_text, action_turns

RESPONSE_PREFIX = '{"tool": "'
MAX_NEW_TOKENS = 96


def _stop_ids(model: Any, tokenizer: Any) -> set[int]:
    ids = {tokenizer.eos_token_id}
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids |= set(configured) if isinstance(configured, list) else {configured}
    return {i for i in ids if i is not None}


@dataclass
class GreedyDecoder:
    """Greedy decoding of the next action with a KV cache, one prompt at a time."""

    model: Any
    tokenizer: Any
    max_new_tokens: int = MAX_NEW_TOKENS

    @property
    def chat(self) -> bool:
        return bool(getattr(self.tokenizer, "chat_template", None))

    def prompt(self, task: AttributionTask, lines: list[str]) -> str:
        """The full prompt text, ending with the forced reply opening."""
        if not self.chat:
            return action_text(task, lines) + RESPONSE_PREFIX
        system, user = action_turns(task, lines)
        turns = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        head = self.tokenizer.apply_chat_template(turns, tokenize=False, add_generation_prompt=True)
        return head + RESPONSE_PREFIX

    def __call__(self, task: AttributionTask, lines: list[str]) -> str:
        """The completion, forced opening included: what the parser reads."""
        ids = self.tokenizer(self.prompt(task, lines), add_special_tokens=not self.chat)["input_ids"]
        closed = lambda new: first_object_closed(RESPONSE_PREFIX + self.tokenizer.decode(new))  # noqa: E731
        new = greedy_ids(self.model, ids, _stop_ids(self.model, self.tokenizer), self.max_new_tokens, closed)
        return RESPONSE_PREFIX + self.tokenizer.decode(new, skip_special_tokens=True)


def greedy_ids(
    model: Any, ids: list[int], stop: set[int], max_new_tokens: int, closed: Callable[[list[int]], bool]
) -> list[int]:
    """Greedy continuation of ``ids`` with a KV cache, up to a stop token, ``closed`` or the budget."""
    import torch

    device = next(model.parameters()).device
    new: list[int] = []
    with torch.inference_mode():
        out = model(input_ids=torch.tensor([ids], device=device), use_cache=True, logits_to_keep=1)
        for _ in range(max_new_tokens):
            token = int(out.logits[0, -1].argmax())
            if token in stop:
                break
            new.append(token)
            if closed(new):
                break
            out = model(input_ids=torch.tensor([[token]], device=device), cache=out.cache, use_cache=True)
    return new

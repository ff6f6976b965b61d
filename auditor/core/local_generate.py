"""Greedy generation with the local model that stops at a deadline, prefill included.

On a CPU the prompt's prefill, not the reply, takes most of a call's time, and transformers'
``generate`` checks its time limit only between generated tokens: a long prompt overran the
agent's budget by tens of seconds. Here the prompt is first cut to what the time left can prefill
at the rate measured on this machine (``Rates``, measured at start and updated by every call),
then read in chunks of about a quarter of a second, and the reply is decoded token by token; the
deadline (``time.monotonic()``) is checked before every chunk and every token.
"""

from __future__ import annotations

import functools
import inspect
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from auditor.core.prompt_fit import common_cap

if TYPE_CHECKING:
    from auditor.core.local_model import LoadedModel

CHUNK_S = 0.25  # prefill chunk length in seconds: the longest the deadline can go unchecked
REPLY_TOKENS = 96  # time is kept for this many reply tokens (a tool call) when the prompt is cut
SAFETY = 0.8  # share of the measured prefill rate relied upon: the rate varies with load
CUT = "\n[… {n} tokens left out to fit the time budget …]\n"


@dataclass
class Rates:
    """Tokens per second for prefill and for decoding, measured on this machine while it runs."""

    prefill: float
    decode: float
    threads: int = 1  # torch's thread count they were measured with (the faster: see ``measure``)

    def update(self, prefill: tuple[int, float] | None, decode: tuple[int, float] | None) -> None:
        """Fold one call's measured (tokens, seconds) into the rates (half old, half new)."""
        if prefill and prefill[0] >= 16 and prefill[1] > 0:
            self.prefill = (self.prefill + prefill[0] / prefill[1]) / 2
        if decode and decode[0] >= 4 and decode[1] > 0:
            self.decode = (self.decode + decode[0] / decode[1]) / 2


@dataclass
class Generation:
    """One call's reply and what the deadline did to it."""

    text: str
    prompt_tokens: int  # the prompt as read, after any cut
    completion_tokens: int
    cut_tokens: int  # prompt tokens left out to fit the time left
    stopped: str | None  # None, or where the deadline stopped the call: "prefill" or "decode"
    prefill_rate: float  # tokens/s this call planned with


@functools.cache
def _cache_kw(model_class: type) -> str:
    """The forward argument that takes the KV cache (renamed ``cache`` in transformers 5)."""
    return "cache" if "cache" in inspect.signature(model_class.forward).parameters else "past_key_values"


def _forward(model: Any, ids: Any, cache: Any) -> Any:
    return model(input_ids=ids, use_cache=True, **{_cache_kw(type(model)): cache})


def _new_cache(model: Any) -> Any:
    from transformers import DynamicCache

    return DynamicCache(config=model.config)


def measure(loaded: LoadedModel) -> Rates:
    """Pick torch's thread count and measure the rates: after a warm-up pass, a 64-token prefill
    with one thread and with torch's default, the faster kept, then 8 decode steps. Threads spin
    on busy cores: on the 2-core test machine under a load of 7, one thread prefilled at 95-162
    tokens/s and decoded at 4-9, two threads at 16-33 and 0.4-0.5; an idle many-core machine is
    the other way round."""
    import torch

    model, prompt = loaded.model, torch.arange(1000, 1064).unsqueeze(0)

    def prefill(threads: int) -> tuple[float, Any, Any]:
        torch.set_num_threads(threads)
        cache = _new_cache(model)
        started = time.perf_counter()
        out = _forward(model, prompt, cache)
        return time.perf_counter() - started, out, cache

    with torch.no_grad():
        _forward(model, prompt[:, :16], _new_cache(model))
        timed = {threads: prefill(threads) for threads in sorted({torch.get_num_threads(), 1})}
        best = min(timed, key=lambda threads: timed[threads][0])
        torch.set_num_threads(best)
        seconds, out, cache = timed[best]
        token = out.logits[:, -1].argmax(-1, keepdim=True)
        started = time.perf_counter()
        for _ in range(8):
            token = _forward(model, token, cache).logits[:, -1].argmax(-1, keepdim=True)
        decode = 8 / (time.perf_counter() - started)
    return Rates(prompt.shape[1] / seconds, decode, best)


def _template(loaded: LoadedModel, chat: list[dict[str, str]]) -> list[int]:
    ids = loaded.tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=True)
    if not isinstance(ids, list):  # a BatchEncoding in some tokenizers' versions
        ids = ids["input_ids"]
    return [int(i) for i in ids]


def fit(loaded: LoadedModel, chat: list[dict[str, str]], allowance: int) -> tuple[list[int], int]:
    """The prompt's token ids cut to at most ``allowance`` tokens, and how many were left out.
    A cut message keeps its head and its tail (the tool protocol closes the system message, a data
    block's closing tag closes a tool result) and says how much was left out. Empty ids when
    even the messages' frame (roles, template) does not fit."""
    ids = _template(loaded, chat)
    if len(ids) <= allowance:
        return ids, 0
    tok = loaded.tokenizer
    contents = [tok.encode(m["content"], add_special_tokens=False) for m in chat]
    frame = len(ids) - sum(len(c) for c in contents)
    marker = len(tok.encode(CUT.format(n=len(ids)), add_special_tokens=False))
    budget, lengths = allowance - frame, [len(c) for c in contents]
    for _ in range(4):  # token boundaries shift when cut text is re-encoded: shrink and retry
        cap = common_cap(lengths, budget)
        if cap is not None:  # room for the note in each message that is cut
            cap = common_cap(lengths, budget - marker * sum(n > cap for n in lengths))
        if cap is None or cap <= 0:
            return [], len(ids)
        cut_chat = [
            {**m, "content": _middle_cut(tok, c, cap)} if len(c) > cap else m
            for m, c in zip(chat, contents, strict=True)
        ]
        fitted = _template(loaded, cut_chat)
        if len(fitted) <= allowance:
            return fitted, len(ids) - len(fitted)
        budget -= len(fitted) - allowance
    return [], len(ids)


def _middle_cut(tok: Any, ids: list[int], keep: int) -> str:
    """``ids`` as text with all but ``keep`` tokens of its middle left out."""
    tail = keep // 2
    return (
        tok.decode(ids[: keep - tail])
        + CUT.format(n=len(ids) - keep)
        + (tok.decode(ids[-tail:]) if tail else "")
    )


def generate(
    loaded: LoadedModel, rates: Rates, chat: list[dict[str, str]], max_new_tokens: int, deadline: float | None
) -> Generation:
    """Greedy decoding of a reply to ``chat``, stopped at ``deadline`` (monotonic seconds)."""
    import torch

    planned = rates.prefill
    if deadline is None:
        ids, cut = _template(loaded, chat), 0
    else:
        left = deadline - time.monotonic()
        reply_s = min(left / 2, min(max_new_tokens, REPLY_TOKENS) / rates.decode)
        ids, cut = fit(loaded, chat, int(SAFETY * rates.prefill * (left - reply_s)))
    if not ids:
        return Generation("", 0, 0, cut, "prefill", planned)
    model, chunk = loaded.model, max(16, min(512, int(rates.prefill * CHUNK_S)))
    prompt = torch.tensor([ids])
    eos = _eos_ids(loaded)
    new: list[int] = []
    stopped = None
    with torch.no_grad():
        cache = _new_cache(model)
        started = time.perf_counter()
        out = None
        for start in range(0, len(ids), chunk):
            if deadline is not None and time.monotonic() >= deadline:
                return Generation("", len(ids), 0, cut, "prefill", planned)
            out = _forward(model, prompt[:, start : start + chunk], cache)
        prefill_s = time.perf_counter() - started
        started = time.perf_counter()
        token = out.logits[:, -1].argmax(-1, keepdim=True)
        while True:
            new.append(int(token))
            if new[-1] in eos or len(new) >= max_new_tokens:
                break
            if deadline is not None and time.monotonic() >= deadline:
                stopped = "decode"
                break
            token = _forward(model, token, cache).logits[:, -1].argmax(-1, keepdim=True)
        rates.update((len(ids), prefill_s), (len(new) - 1, time.perf_counter() - started))
    text = loaded.tokenizer.decode(new, skip_special_tokens=True).strip()
    return Generation(text, len(ids), len(new), cut, stopped, planned)


def _eos_ids(loaded: LoadedModel) -> set[int]:
    configured = loaded.model.generation_config.eos_token_id
    ids = set(configured if isinstance(configured, list) else [configured])
    return {int(i) for i in ids | {loaded.tokenizer.eos_token_id} if i is not None}

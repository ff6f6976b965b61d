"""Teacher-forced target scores for every factor subset, exactly and without waste.

For target tokens y_1..y_m after a subset prompt, the per-token log-odds is
z_y − logsumexp(z_{v≠y}) (stable where q → 1, unlike log q − log(1 − q)) and the log-probability
is z_y − logsumexp(z). The LM head runs only at the positions that predict target tokens.

``TrieScorer`` encodes the scaffold once and runs the prefix trie of all subsets in batches of
equal content (see ``scoring.trie``), each row over its own past gathered from a pool of cached
keys and values. ``naive_scores`` scores one whole prompt at a time: the reference the trie must match.
torch is imported lazily so that the rest of scoring imports without it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from auditor.core.errors import ContractError
from scoring.prompts import PromptParts
from scoring.trie import SCAFFOLD_ONLY, Plan, plan_batches


@dataclass(frozen=True)
class TargetScores:
    """Scores of one target for each requested subset mask (arrays aligned with ``masks``)."""

    masks: np.ndarray
    sum_logodds: np.ndarray
    mean_logodds: np.ndarray
    sum_logprob: np.ndarray
    n_target_tokens: int


@dataclass
class ScoreStats:
    """What a scoring pass cost: model tokens, forward calls, wall time."""

    tokens: int = 0
    calls: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class TokenizedParts:
    scaffold: list[int]
    factors: list[list[int]]
    queries: list[list[int]]
    targets: list[list[int]]

    def leaf(self, q: int) -> list[int]:
        """Query tokens then target tokens but the last: the last m positions predict the target."""
        return self.queries[q] + self.targets[q][:-1]


def tokenize_parts(tokenizer: Any, parts: PromptParts) -> TokenizedParts:
    """Tokenise each piece once; refuse templates whose pieces do not concatenate to the prompt."""
    enc = lambda text, special=False: tokenizer(text, add_special_tokens=special)["input_ids"]  # noqa: E731
    tok = TokenizedParts(
        scaffold=enc(parts.scaffold, True),
        factors=[enc(f) for f in parts.factors],
        queries=[enc(q) for q in parts.queries],
        targets=[enc(t) for t in parts.targets],
    )
    full = (1 << len(parts.factors)) - 1
    for q in range(len(parts.queries)):
        for mask in (0, full):
            whole = enc(parts.prompt(mask, q) + parts.targets[q], True)
            pieces = tok.scaffold + [t for i, f in enumerate(tok.factors) if mask >> i & 1 for t in f]
            if whole != pieces + tok.queries[q] + tok.targets[q]:
                raise ContractError(
                    f"prompt pieces do not tokenise like the whole prompt (query {q}, mask {mask:#x}); "
                    "factor lines must end in a newline and targets start with a space"
                )
    return tok


def token_scores(model: Any, hidden: Any, target_ids: Any) -> tuple[Any, Any]:
    """Per-token log-odds and log-probability from hidden states at the predicting positions."""
    import torch

    logits = model.get_output_embeddings()(hidden).float()
    z_y = logits.gather(-1, target_ids[:, None]).squeeze(-1)
    lse_all = torch.logsumexp(logits, dim=-1)
    others = logits.scatter(-1, target_ids[:, None], float("-inf"))
    return z_y - torch.logsumexp(others, dim=-1), z_y - lse_all


def _decoder(model: Any) -> Any:
    return model.get_decoder() if hasattr(model, "get_decoder") else model.model


def _assemble(
    masks: list[int], per_leaf: dict[tuple[int, int], tuple[float, float, int]], q: int
) -> TargetScores:
    rows = [per_leaf[(m, q)] for m in masks]
    n_tok = rows[0][2]
    odds = np.array([r[0] for r in rows])
    return TargetScores(np.array(masks), odds, odds / n_tok, np.array([r[1] for r in rows]), n_tok)


def naive_scores(
    model: Any, tok: TokenizedParts, masks: list[int], queries: list[int], stats: ScoreStats | None = None
) -> list[TargetScores]:
    """One full prompt per (subset, target), no cache reuse: the reference implementation."""
    import torch

    device = next(model.parameters()).device
    per_leaf: dict[tuple[int, int], tuple[float, float, int]] = {}
    start = time.perf_counter()
    with torch.inference_mode():
        for mask in masks:
            body = tok.scaffold + [t for i, f in enumerate(tok.factors) if mask >> i & 1 for t in f]
            for q in queries:
                ids = body + tok.leaf(q)
                m = len(tok.targets[q])
                hidden = _decoder(model)(input_ids=torch.tensor([ids], device=device)).last_hidden_state
                lo, lp = token_scores(model, hidden[0, -m:], torch.tensor(tok.targets[q], device=device))
                per_leaf[(mask, q)] = (float(lo.sum()), float(lp.sum()), m)
                if stats is not None:
                    stats.tokens += len(ids)
                    stats.calls += 1
    if stats is not None:
        stats.seconds += time.perf_counter() - start
    return [_assemble(masks, per_leaf, q) for q in queries]


def _grouped_sdpa(
    module: Any,
    query: Any,
    key: Any,
    value: Any,
    attention_mask: Any,
    scaling: float | None = None,
    **kwargs: Any,
) -> tuple[Any, None]:
    """SDPA over grouped key/value heads as they are: the same result as repeating them, and on the
    CPU under an explicit mask about a third faster (transformers repeats them whenever a mask is given)."""
    import torch

    causal = attention_mask is None and query.shape[2] > 1  # the scaffold's own call has no mask
    out = torch.nn.functional.scaled_dot_product_attention(
        query, key, value, attn_mask=attention_mask, is_causal=causal, scale=scaling, enable_gqa=True
    )
    return out.transpose(1, 2).contiguous(), None


@contextmanager
def _attention(model: Any, device: Any) -> Iterator[None]:
    """Grouped SDPA for the duration of a CPU scoring pass (other devices keep their kernels)."""
    if device.type != "cpu" or model.config._attn_implementation != "sdpa":
        yield
        return
    from transformers import AttentionInterface

    AttentionInterface.register("grouped_sdpa", _grouped_sdpa)
    model.set_attn_implementation("grouped_sdpa")
    try:
        yield
    finally:
        model.set_attn_implementation("sdpa")


def _row_mask(segments: list[tuple[int, int]], n: int) -> np.ndarray:
    """Causal within a row, except that a leaf sees only the factor tokens and itself."""
    allowed = np.tri(n, dtype=bool)
    (_, factor), *leaves = segments
    for offset, length in leaves:
        allowed[offset : offset + length, factor:offset] = False
    return allowed


@cache
def _gathered_layer_class() -> type:
    """A cache layer over a past gathered with room for the call's own tokens: no concatenation.
    (Defined on first use, because transformers is imported lazily.)"""
    from transformers.cache_utils import DynamicLayer

    class GatheredLayer(DynamicLayer):
        def __init__(self, keys: Any, values: Any, width: int) -> None:
            super().__init__()
            # gathered as [batch, seq, kv heads, dim]; attention reads [batch, kv heads, seq, dim]
            self.keys, self.values = keys.transpose(1, 2), values.transpose(1, 2)
            self.width, self.device, self.is_initialized = width, keys.device, True

        def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
            self.keys[:, :, self.width :] = key_states
            self.values[:, :, self.width :] = value_states
            return self.keys, self.values

        def get_seq_length(self) -> int:
            return self.width

    return GatheredLayer


class TrieScorer:
    """Exact subset scoring: the scaffold encoded once, the prefix trie run in batches of equal content."""

    def __init__(self, model: Any, token_budget: int = 2048) -> None:
        self.model = model
        self.token_budget = token_budget
        self.device = next(model.parameters()).device
        self.dtype = next(model.parameters()).dtype

    def _run(
        self, plan: Plan, batch: list[int], pools: list[tuple[Any, Any]], p0: int, tokens: list[int]
    ) -> Any:
        """One batched forward of equal-content rows, each over its own gathered past."""
        import torch
        from transformers.cache_utils import Cache

        pasts = [plan.past(i, p0) for i in batch]
        width = max(map(len, pasts))
        n = len(tokens)
        # Each row's past and n spare slots, gathered in one copy; the call writes its own keys there.
        index = torch.tensor([p + [0] * (width + n - len(p)) for p in pasts], device=self.device)
        allowed = np.zeros((len(batch), n, width + n), dtype=bool)
        for row, past in enumerate(pasts):
            allowed[row, :, : len(past)] = True
        allowed[:, :, width:] = _row_mask(plan.segments(plan.pieces[batch[0]]), n)
        mask = torch.zeros((len(batch), 1, n, width + n), dtype=self.dtype, device=self.device)
        mask.masked_fill_(torch.from_numpy(~allowed[:, None]).to(self.device), torch.finfo(self.dtype).min)
        offsets = np.array(plan.offsets(plan.pieces[batch[0]]))
        starts = np.array([plan.pieces[i].start for i in batch])
        positions = torch.from_numpy(starts[:, None] + offsets[None, :]).to(self.device)
        buffers = [(k[index], v[index]) for k, v in pools]  # [batch, seq, kv heads, dim]
        layer = _gathered_layer_class()
        out = _decoder(self.model)(
            input_ids=torch.tensor([tokens] * len(batch), device=self.device),
            position_ids=positions,
            attention_mask=mask,
            cache=Cache(layers=[layer(k, v, width) for k, v in buffers]),
            use_cache=True,
        )
        first, length = plan.pieces[batch[0]].slot, plan.factor_length(plan.pieces[batch[0]])
        if length:  # keep the factor tokens' keys and values for the pieces below them
            for (k, v), (bk, bv) in zip(pools, buffers, strict=True):
                k[first : first + len(batch) * length] = bk[:, width : width + length].flatten(0, 1)
                v[first : first + len(batch) * length] = bv[:, width : width + length].flatten(0, 1)
        return out.last_hidden_state

    def score(
        self,
        tok: TokenizedParts,
        masks: list[int] | None = None,
        queries: list[int] | None = None,
        stats: ScoreStats | None = None,
    ) -> list[TargetScores]:
        """Scores of each query's target for each mask (default: all 2^n subsets, all queries)."""
        import torch
        from transformers import DynamicCache

        n = len(tok.factors)
        masks = list(range(1 << n)) if masks is None else masks
        queries = list(range(len(tok.queries))) if queries is None else queries
        leaves = [tok.leaf(q) for q in queries]
        p0 = len(tok.scaffold)
        plan = plan_batches(
            masks, [len(f) for f in tok.factors], [len(x) for x in leaves], p0, self.token_budget
        )
        per_leaf: dict[tuple[int, int], tuple[float, float, int]] = {}
        start = time.perf_counter()
        with torch.inference_mode(), _attention(self.model, self.device):
            scaffold = DynamicCache()
            _decoder(self.model)(
                input_ids=torch.tensor([tok.scaffold], device=self.device), cache=scaffold, use_cache=True
            )
            pools = []
            for layer in scaffold.layers:
                pair = []
                for part in (layer.keys, layer.values):
                    pool = part.new_empty((plan.pool_size, part.shape[1], part.shape[3]))
                    pool[:p0] = part[0].transpose(0, 1)
                    pair.append(pool)
                pools.append((pair[0], pair[1]))
            for batch in plan.batches:
                piece = plan.pieces[batch[0]]
                tokens = [] if piece.content == SCAFFOLD_ONLY else list(tok.factors[piece.content])
                if piece.scored:
                    tokens += [t for leaf in leaves for t in leaf]
                hidden = self._run(plan, batch, pools, p0, tokens)
                if piece.scored:
                    self._score_leaves(plan, batch, hidden, queries, tok, per_leaf)
        if stats is not None:
            stats.seconds += time.perf_counter() - start
            stats.tokens += p0 + plan.n_tokens
            stats.calls += 1 + len(plan.batches)
        return [_assemble(masks, per_leaf, i) for i in range(len(queries))]

    def _score_leaves(
        self,
        plan: Plan,
        batch: list[int],
        hidden: Any,
        queries: list[int],
        tok: TokenizedParts,
        per_leaf: dict[tuple[int, int], tuple[float, float, int]],
    ) -> None:
        """Score a batch's leaves: the last m positions of each leaf predict its m target tokens."""
        import torch

        rows, targets, spans = [], [], []
        for qi, (offset, length) in enumerate(plan.segments(plan.pieces[batch[0]])[1:]):
            m = len(tok.targets[queries[qi]])
            rows.extend(range(offset + length - m, offset + length))
            targets.extend(tok.targets[queries[qi]])
            spans.append((qi, m))
        ids = torch.tensor(targets, device=self.device).repeat(len(batch))
        lo_t, lp_t = token_scores(self.model, hidden[:, rows].flatten(0, 1), ids)
        lo = lo_t.double().cpu().numpy().reshape(len(batch), -1)  # one device sync per call
        lp = lp_t.double().cpu().numpy().reshape(len(batch), -1)
        for row, i in enumerate(batch):
            offset = 0
            for qi, m in spans:
                key = (plan.pieces[i].mask, qi)
                per_leaf[key] = (
                    float(lo[row, offset : offset + m].sum()),
                    float(lp[row, offset : offset + m].sum()),
                    m,
                )
                offset += m

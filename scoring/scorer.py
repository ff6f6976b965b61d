"""Teacher-forced target scores for every factor subset, exactly and without waste.

For target tokens y_1..y_m after a subset prompt, the per-token log-odds is
z_y − logsumexp(z_{v≠y}) (stable where q → 1, unlike log q − log(1 − q)) and the log-probability
is z_y − logsumexp(z). The LM head runs only at the positions that predict target tokens.

``TrieScorer`` encodes the scaffold once, packs the prefix trie of all subsets into tree-attention
calls (see ``scoring.trie``) and gathers each top part's cached path as the past of its lower
call. ``naive_scores`` scores one whole prompt at a time: the reference the trie must match.
torch is imported lazily so that the rest of scoring imports without it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from auditor.errors import ContractError
from scoring.prompts import PromptParts
from scoring.trie import Call, choose_split, layout, plan_calls


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
    extra: dict[str, Any] = field(default_factory=dict)


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


class TrieScorer:
    """Exact subset scoring with the scaffold encoded once and the prefix trie packed into calls."""

    def __init__(self, model: Any, token_budget: int = 512) -> None:
        self.model = model
        self.token_budget = token_budget
        self.device = next(model.parameters()).device
        self.dtype = next(model.parameters()).dtype

    def _run(self, call: Call, past: Any, past_len: int) -> tuple[Any, list[int], list[int]]:
        """One packed forward; returns hidden states, and each node's first token index and length."""
        import torch

        ids, positions, node_of, ancestors = layout(call, past_len)
        n = len(ids)
        # Built on the host in one piece: a few hundred nodes would be as many tiny device launches.
        anc = np.zeros((len(call.nodes), len(call.nodes)), dtype=bool)
        for i, chain in enumerate(ancestors):
            anc[i, chain] = True
        node_arr = np.asarray(node_of)
        allowed = anc[node_arr[:, None], node_arr[None, :]]
        allowed &= (node_arr[:, None] != node_arr[None, :]) | np.tri(n, dtype=bool)
        blocked = torch.from_numpy(~allowed).to(self.device)
        mask = torch.zeros((1, 1, n, past_len + n), dtype=self.dtype, device=self.device)
        mask[0, 0, :, past_len:].masked_fill_(blocked, torch.finfo(self.dtype).min)
        out = _decoder(self.model)(
            input_ids=torch.tensor([ids], device=self.device),
            position_ids=torch.tensor([positions], device=self.device),
            attention_mask=mask,
            cache=past,
            use_cache=True,
        )
        starts, lengths, offset = [], [], 0
        for node in call.nodes:
            starts.append(offset)
            lengths.append(len(node.tokens))
            offset += len(node.tokens)
        return out.last_hidden_state[0], starts, lengths

    def _gather(self, pool: Any, index: Any) -> Any:
        from transformers import DynamicCache

        layers = [
            (layer.keys.index_select(2, index), layer.values.index_select(2, index)) for layer in pool.layers
        ]
        return DynamicCache(ddp_cache_data=layers)

    def score(
        self,
        tok: TokenizedParts,
        masks: list[int] | None = None,
        queries: list[int] | None = None,
        stats: ScoreStats | None = None,
        split: int | None = None,
    ) -> list[TargetScores]:
        """Scores of each query's target for each mask (default: all 2^n subsets, all queries)."""
        import torch
        from transformers import DynamicCache

        n = len(tok.factors)
        masks = list(range(1 << n)) if masks is None else masks
        queries = list(range(len(tok.queries))) if queries is None else queries
        leaves = [tok.leaf(q) for q in queries]
        if split is None:
            per_factor = sum(map(len, tok.factors)) / max(n, 1)
            split = choose_split(n, per_factor, sum(map(len, leaves)), self.token_budget)
        plan = plan_calls(masks, tok.factors, leaves, split)
        per_leaf: dict[tuple[int, int], tuple[float, float, int]] = {}
        start = time.perf_counter()
        with torch.inference_mode():
            pool = DynamicCache()
            _decoder(self.model)(
                input_ids=torch.tensor([tok.scaffold], device=self.device), cache=pool, use_cache=True
            )
            p0 = len(tok.scaffold)
            top_start: list[int] = []
            if plan.top.nodes:
                _, top_start, _ = self._run(plan.top, pool, p0)
            for call in plan.lower:
                path = list(range(p0))
                prefix = call.top
                chain = []
                while prefix:
                    chain.append(prefix)
                    prefix &= ~(1 << (prefix.bit_length() - 1))
                for pre in reversed(chain):
                    node = plan.top.node_of_prefix[pre]
                    s = p0 + top_start[node]
                    path.extend(range(s, s + len(plan.top.nodes[node].tokens)))
                past = self._gather(pool, torch.tensor(path, device=self.device))
                hidden, starts, lengths = self._run(call, past, len(path))
                self._score_leaves(call, hidden, starts, lengths, queries, tok, per_leaf)
        if stats is not None:
            stats.seconds += time.perf_counter() - start
            stats.tokens += p0 + plan.n_tokens
            stats.calls += 1 + bool(plan.top.nodes) + len(plan.lower)
            stats.extra["split"] = split
        return [_assemble(masks, per_leaf, i) for i in range(len(queries))]

    def _score_leaves(
        self,
        call: Call,
        hidden: Any,
        starts: list[int],
        lengths: list[int],
        queries: list[int],
        tok: TokenizedParts,
        per_leaf: dict[tuple[int, int], tuple[float, float, int]],
    ) -> None:
        import torch

        rows, targets, spans = [], [], []
        for i, node in enumerate(call.nodes):
            if node.leaf is None:
                continue
            mask, qi = node.leaf
            m = len(tok.targets[queries[qi]])
            end = starts[i] + lengths[i]
            rows.extend(range(end - m, end))
            targets.extend(tok.targets[queries[qi]])
            spans.append((mask, qi, m))
        lo_t, lp_t = token_scores(self.model, hidden[rows], torch.tensor(targets, device=self.device))
        lo, lp = lo_t.double().cpu().numpy(), lp_t.double().cpu().numpy()  # one device sync per call
        offset = 0
        for mask, qi, m in spans:
            per_leaf[(mask, qi)] = (
                float(lo[offset : offset + m].sum()),
                float(lp[offset : offset + m].sum()),
                m,
            )
            offset += m

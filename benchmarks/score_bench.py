"""Teacher-forced subset scoring on the CPU with SmolLM2: naive one prompt at a time vs the trie.

Prints, for all 256 subsets of one real target: tokens naive scoring processes, unique tokens the
prefix trie needs (their ratio is the ideal speedup), subsets/s of each, the measured speedup
and its fraction of the ideal, and the largest score difference (must stay below 1e-3).

    python benchmarks/score_bench.py [--task 0] [--target 1] [--naive-subsets 256] [--threads 2] [--rounds 3]

``--naive-subsets`` times naive scoring on a uniform random sample of the masks (its rate is per
subset, so a sample measures it; the score comparison covers the sampled masks).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a clone


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="agentaudit")
    parser.add_argument("--task", type=int, default=0)
    parser.add_argument("--target", type=int, default=1, help="0 = tool target, 1 and 2 = slot targets")
    parser.add_argument("--naive-subsets", type=int, default=256)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--budget", type=int, default=2048, help="new tokens per batched trie call")
    parser.add_argument(
        "--rounds", type=int, default=3, help="alternating naive/trie rounds (median reported)"
    )
    args = parser.parse_args()

    import torch

    from auditor.core.local_model import load_model
    from scoring.datasets import build_dataset
    from scoring.prompts import prompt_parts
    from scoring.scorer import ScoreStats, TrieScorer, naive_scores, tokenize_parts

    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    lm = load_model()
    print(
        f"model load: {time.perf_counter() - t0:.1f} s (SmolLM2-135M-Instruct, float32, {args.threads} threads)"
    )
    task = build_dataset(args.dataset)[args.task]
    target = task.targets[args.target]
    tok = tokenize_parts(lm.tokenizer, prompt_parts(task, [target]))
    n = len(tok.factors)
    all_masks = list(range(1 << n))
    naive_tokens = sum(
        len(tok.scaffold) + sum(len(tok.factors[i]) for i in range(n) if m >> i & 1) + len(tok.leaf(0))
        for m in all_masks
    )
    print(
        f"task {task.task_id} target {target.target_id} = {target.target_string!r}: scaffold "
        f"{len(tok.scaffold)} tokens, factors {[len(f) for f in tok.factors]}, query+target {len(tok.leaf(0)) + 1}"
    )

    # Rounds alternate the two so that a noisy machine slows both alike; each round gives a ratio.
    rng = np.random.default_rng(0)  # a uniform sample: a strided one would skip the low factors
    sample = sorted(
        rng.choice(len(all_masks), min(args.naive_subsets, len(all_masks)), replace=False).tolist()
    )
    scorer = TrieScorer(lm.model, token_budget=args.budget)
    ratios, trie_rates, naive_rates = [], [], []
    for _ in range(args.rounds):
        trie_stats, naive_stats = ScoreStats(), ScoreStats()
        trie = scorer.score(tok, all_masks, [0], trie_stats)[0]
        naive = naive_scores(lm.model, tok, sample, [0], naive_stats)[0]
        trie_rates.append(len(all_masks) / trie_stats.seconds)
        naive_rates.append(len(sample) / naive_stats.seconds)
        ratios.append(trie_rates[-1] / naive_rates[-1])
    diff_lo = float(np.abs(naive.sum_logodds - trie.sum_logodds[sample]).max())
    diff_lp = float(np.abs(naive.sum_logprob - trie.sum_logprob[sample]).max())
    best = int(np.argsort(ratios)[(len(ratios) - 1) // 2])  # the median round (the lower of two)
    naive_rate, trie_rate, measured = naive_rates[best], trie_rates[best], ratios[best]
    ideal = naive_tokens / trie_stats.tokens
    print(f"naive tokens (256 prompts):   {naive_tokens:>8,}")
    print(
        f"trie unique tokens:           {trie_stats.tokens:>8,}  ({trie_stats.calls} forward calls, "
        f"budget {args.budget} tokens)"
    )
    print(f"ideal speedup (token ratio):  {ideal:8.2f}x")
    print(f"naive:  {naive_rate:6.2f} subsets/s  ({len(sample)} subsets per round)")
    print(f"trie:   {trie_rate:6.2f} subsets/s  (256 subsets per round)")
    print(f"per-round speedups: {', '.join(f'{r:.2f}x' for r in ratios)}")
    print(f"measured speedup (median round): {measured:.2f}x = {measured / ideal:.2f} of ideal")
    print(f"max |naive - trie|: log-odds {diff_lo:.2e}, log-prob {diff_lp:.2e} over {len(sample)} subsets")


if __name__ == "__main__":
    main()

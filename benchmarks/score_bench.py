"""Teacher-forced subset scoring on the CPU with SmolLM2: naive one prompt at a time vs the trie.

Prints, for all 256 subsets of one real target: tokens naive scoring processes, unique tokens the
prefix trie needs (their ratio is the ideal speedup), subsets/s of each, the measured speedup
and its fraction of the ideal, and the largest score difference (must stay below 1e-3).

    python benchmarks/score_bench.py [--task 0] [--target 1] [--naive-subsets 256] [--threads 2]

``--naive-subsets`` times naive scoring on an evenly spaced sample of the masks (its rate is per
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
    parser.add_argument("--budget", type=int, default=512, help="tokens per packed trie call")
    args = parser.parse_args()

    import torch

    from auditor.local_model import load_model
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

    trie_stats = ScoreStats()
    trie = TrieScorer(lm.model, token_budget=args.budget).score(tok, all_masks, [0], trie_stats)[0]
    sample = all_masks[:: max(1, len(all_masks) // args.naive_subsets)][: args.naive_subsets]
    naive_stats = ScoreStats()
    naive = naive_scores(lm.model, tok, sample, [0], naive_stats)[0]

    diff_lo = float(np.abs(naive.sum_logodds - trie.sum_logodds[sample]).max())
    diff_lp = float(np.abs(naive.sum_logprob - trie.sum_logprob[sample]).max())
    naive_rate = len(sample) / naive_stats.seconds
    trie_rate = len(all_masks) / trie_stats.seconds
    ideal = naive_tokens / trie_stats.tokens
    measured = trie_rate / naive_rate
    print(f"naive tokens (256 prompts):   {naive_tokens:>8,}")
    print(
        f"trie unique tokens:           {trie_stats.tokens:>8,}  (split {trie_stats.extra['split']}, "
        f"{trie_stats.calls} forward calls)"
    )
    print(f"ideal speedup (token ratio):  {ideal:8.2f}x")
    print(f"naive:  {naive_rate:6.2f} subsets/s  ({len(sample)} subsets in {naive_stats.seconds:.1f} s)")
    print(f"trie:   {trie_rate:6.2f} subsets/s  (256 subsets in {trie_stats.seconds:.1f} s)")
    print(f"measured speedup: {measured:.2f}x = {measured / ideal:.2f} of ideal")
    print(f"max |naive - trie|: log-odds {diff_lo:.2e}, log-prob {diff_lp:.2e} over {len(sample)} subsets")


if __name__ == "__main__":
    main()

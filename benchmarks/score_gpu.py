"""GPU throughput of exact subset scoring: a Qwen3-4B-architecture model with random weights.

Speed does not depend on weight values and no weights can be carried to the GPU machine, so the
model is built from its configuration in code. Token ids are random with the shape of the real
tasks (scaffold 252 tokens, eight factors of 31–42 tokens, a 20-token query and a 4-token target
per audited target, three targets per task). One short run prints everything:

- subsets/s (target-subset scores per second), tokens/s, forward calls;
- achieved TFLOP/s (2 · non-embedding parameters per token, plus the LM head at target positions)
  against the chip's dense bf16 peak;
- the projected time for the whole 1,350-target grid (450 tasks × 3 targets × 256 subsets), and
  for 1,650 targets with the dojoaudit set;
- the largest trie-vs-naive difference on a few subsets (same dtype), as a sanity check;
- the generated-action experiments (generation, degradation, guardrail): greedy decoding through
  the runs' own code path (``scoring.decode.greedy_ids``) on prompts of the real action prompts'
  length, for a fixed number of new tokens (random weights never close the JSON object), and the
  projected time of each experiment over the grid from its contexts per target in agentaudit.

    python benchmarks/score_gpu.py [--tasks 6] [--budget 4096] [--dtype bfloat16] [--peak 989]
        [--decodes 8] [--action-tokens 40]
    python benchmarks/score_gpu.py --small --device cpu --tasks 1   # smoke test of the code path
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a clone

QWEN3_4B = dict(
    vocab_size=151_936,
    hidden_size=2560,
    intermediate_size=9728,
    num_hidden_layers=36,
    num_attention_heads=32,
    num_key_value_heads=8,
    head_dim=128,
    max_position_embeddings=40_960,
    rope_theta=1_000_000.0,
    rms_norm_eps=1e-6,
    tie_word_embeddings=True,
)
SMALL = dict(
    QWEN3_4B,
    hidden_size=256,
    intermediate_size=512,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=64,
)
GRID_TASKS = 450  # the seed's three sets: agentaudit 250, tau2audit 100, bfclaudit 100
DOJO_TASKS = 100  # dojoaudit, the fourth (adversarial) set beside them


def synthetic_task(rng: random.Random, vocab: int):  # -> TokenizedParts
    from scoring.scorer import TokenizedParts

    ids = lambda k: [rng.randrange(1000, vocab) for _ in range(k)]  # noqa: E731
    return TokenizedParts(
        scaffold=ids(252),
        factors=[ids(rng.randint(31, 42)) for _ in range(8)],
        queries=[ids(20) for _ in range(3)],
        targets=[ids(4) for _ in range(3)],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tasks", type=int, default=6, help="tasks timed (3 targets each), after one warm-up"
    )
    parser.add_argument("--budget", type=int, default=4096, help="new tokens per batched call")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--device", default="cuda")
    parser.add_argument(
        "--peak", type=float, default=989.0, help="dense peak TFLOP/s of the chip (H200 bf16)"
    )
    parser.add_argument("--small", action="store_true", help="a 2-layer model, for a CPU smoke test")
    parser.add_argument("--decodes", type=int, default=8, help="greedy decodes timed, after one warm-up")
    parser.add_argument(
        "--action-tokens", type=int, default=40, help="new tokens per decode (a JSON action's length)"
    )
    args = parser.parse_args()

    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from scoring.scorer import ScoreStats, TrieScorer, naive_scores

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("no CUDA device: run on the GPU machine, or use --small --device cpu")
    dtype = getattr(torch, args.dtype)
    sync = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)
    config = Qwen3Config(**(SMALL if args.small else QWEN3_4B))
    t0 = time.perf_counter()
    torch.manual_seed(0)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    with torch.device(args.device):
        model = Qwen3ForCausalLM(config).eval()
    torch.set_default_dtype(previous)
    sync()
    body = sum(p.numel() for name, p in model.named_parameters() if "embed_tokens" not in name)
    print(
        f"model: Qwen3 architecture, {config.num_hidden_layers} layers, hidden {config.hidden_size}, "
        f"{body / 1e9:.2f} B non-embedding parameters, {args.dtype} on {args.device} "
        f"(built in {time.perf_counter() - t0:.1f} s)"
    )
    if args.device.startswith("cuda"):
        print(f"device: {torch.cuda.get_device_name()}")

    rng = random.Random(17)
    scorer = TrieScorer(model, token_budget=args.budget)
    warm = synthetic_task(rng, config.vocab_size)
    scorer.score(warm)
    sync()

    tasks = [synthetic_task(rng, config.vocab_size) for _ in range(args.tasks)]
    stats = ScoreStats()
    sync()
    start = time.perf_counter()
    for tok in tasks:
        scorer.score(tok, stats=stats)
    sync()
    seconds = time.perf_counter() - start
    scores = args.tasks * 3 * 256
    head_flops = (
        2 * config.hidden_size * config.vocab_size * sum(len(t) for tok in tasks for t in tok.targets) * 256
    )
    flops = 2 * body * stats.tokens + head_flops
    tflops = flops / seconds / 1e12
    per_task = seconds / args.tasks
    print(
        f"timed: {args.tasks} tasks = {args.tasks * 3} targets x 256 subsets = {scores:,} subset scores "
        f"in {seconds:.2f} s ({stats.calls} forward calls)"
    )
    print(
        f"throughput: {scores / seconds:,.0f} subsets/s, {stats.tokens / seconds:,.0f} tokens/s "
        f"({stats.tokens / args.tasks:,.0f} unique tokens per task)"
    )
    print(
        f"compute: {tflops:.1f} TFLOP/s achieved = {tflops / args.peak:.1%} of {args.peak:.0f} TFLOP/s peak"
    )
    print(
        f"projected 1,350-target grid ({GRID_TASKS} tasks): {GRID_TASKS * per_task / 60:.1f} min "
        f"(goal: under 10 min); with dojoaudit ({GRID_TASKS + DOJO_TASKS} tasks, 1,650 targets): "
        f"{(GRID_TASKS + DOJO_TASKS) * per_task / 60:.1f} min"
    )

    masks = [0, 1, 0b10100101, 255]
    ref = naive_scores(model, tasks[0], masks, [0])[0]
    got = scorer.score(tasks[0], masks, [0])[0]
    print(
        f"trie vs naive ({args.dtype}, {len(masks)} subsets): max |diff| log-odds "
        f"{float(np.abs(ref.sum_logodds - got.sum_logodds).max()):.3e}"
    )
    generation(model, rng, config.vocab_size, args, sync)


def generation(
    model: Any, rng: random.Random, vocab: int, args: argparse.Namespace, sync: Callable[[], None]
) -> None:
    """Time greedy decoding as the generated-action runs do it and project each experiment."""
    from scoring.action_contexts import action_contexts, degradation_contexts, guardrail_contexts
    from scoring.datasets import build_dataset
    from scoring.decode import greedy_ids

    tasks = build_dataset("agentaudit")
    per_target = {
        name: np.mean([len(contexts(t, target)) for t in tasks for target in t.targets])
        for name, contexts in (
            ("generation", action_contexts),
            ("degradation", degradation_contexts),
            ("guardrail", guardrail_contexts),
        )
    }
    prompt_len = 252 + 8 * 36 + 40  # scaffold, eight factor lines, the question and reply opening
    prompt = lambda: [rng.randrange(1000, vocab) for _ in range(prompt_len)]  # noqa: E731
    never = lambda new: False  # noqa: E731
    greedy_ids(model, prompt(), set(), args.action_tokens, never)  # warm-up
    sync()
    start = time.perf_counter()
    for _ in range(args.decodes):
        greedy_ids(model, prompt(), set(), args.action_tokens, never)
    sync()
    per_decode = (time.perf_counter() - start) / args.decodes
    print(
        f"greedy decoding: {per_decode:.3f} s per action ({prompt_len}-token prompt, {args.action_tokens} new "
        f"tokens, one prompt at a time) = {args.action_tokens / per_decode:,.0f} new tokens/s"
    )
    for name, contexts in per_target.items():
        grid = 3 * GRID_TASKS * contexts * per_decode / 60
        dojo = 3 * (GRID_TASKS + DOJO_TASKS) * contexts * per_decode / 60
        print(
            f"projected {name} run: {contexts:.1f} contexts per target (agentaudit) -> 1,350 targets "
            f"{grid:.1f} min, 1,650 targets {dojo:.1f} min"
        )


if __name__ == "__main__":
    main()

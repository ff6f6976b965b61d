"""Scoring runs end to end on a real store: a tiny random-weight Llama through the real trie scorer,
resumable one-event-per-target runs, and the CLI report with CSV and PNG."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from auditor.surfaces.cli.main import app  # noqa: E402
from scoring.datasets import build_dataset  # noqa: E402
from scoring.prompts import prompt_parts  # noqa: E402
from scoring.runs import done_keys, read_run, run_coalition, start_run  # noqa: E402
from scoring.scorer import ScoreStats, TokenizedParts, TrieScorer, naive_scores  # noqa: E402

VOCAB = 512


class ByteTokenizer:
    """Bytes as tokens: pieces always concatenate exactly, which the real tokenizer is checked for."""

    def __call__(self, text: str, add_special_tokens: bool = False) -> dict[str, list[int]]:
        return {"input_ids": list(text.encode())}


@pytest.fixture(scope="module")
def tiny_model():  # type: ignore[no-untyped-def]
    torch.manual_seed(0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matrices: one thread avoids OpenMP stalls on a busy machine
    config = transformers.LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=8192,
    )
    yield transformers.LlamaForCausalLM(config).eval()
    torch.set_num_threads(threads)


def short_tokens(task, targets=None) -> TokenizedParts:  # type: ignore[no-untyped-def]
    """Short byte-token pieces (a few bytes of each) keep the random model fast."""
    from scoring.scorer import tokenize_parts

    tok = tokenize_parts(ByteTokenizer(), prompt_parts(task, targets))
    return TokenizedParts(
        tok.scaffold[:40],
        [f[:12] for f in tok.factors],
        [q[-10:] for q in tok.queries],
        [t[:4] for t in tok.targets],
    )


def test_trie_matches_naive_on_tiny_model(tiny_model) -> None:  # type: ignore[no-untyped-def]
    tok = short_tokens(build_dataset("agentaudit")[1])
    masks = [0, 1, 6, 77, 128, 200, 255]
    ref = naive_scores(tiny_model, tok, masks, [0, 2])
    for budget in (1, 30, 100, 4096):  # one row per call up to the whole trie in one call per content
        stats = ScoreStats()
        got = TrieScorer(tiny_model, token_budget=budget).score(tok, masks, [0, 2], stats)
        for a, b in zip(ref, got, strict=True):
            assert np.abs(a.sum_logodds - b.sum_logodds).max() < 1e-4
            assert np.abs(a.sum_logprob - b.sum_logprob).max() < 1e-4
        assert stats.tokens < sum(len(tok.scaffold) + 30 for _ in masks) * 2 + 200


def test_run_resumes_and_reports(
    sqlite_store, tiny_model, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    tasks = build_dataset("agentaudit")[:2]
    scorer = TrieScorer(tiny_model, token_budget=256)
    calls: list[str] = []

    def score_task(task, todo):  # type: ignore[no-untyped-def]
        calls.append(task.task_id)
        return scorer.score(short_tokens(task, [task.targets[i] for i in todo]))

    start_run(sqlite_store, "t1", {"dataset": "agentaudit", "model": "tiny", "experiment": "coalition"})
    assert run_coalition(sqlite_store, "t1", tasks[:1], score_task) == (3, 0)
    assert run_coalition(sqlite_store, "t1", tasks, score_task) == (3, 3)  # resumed: only the second task
    assert calls == [t.task_id for t in tasks]
    assert len(done_keys(sqlite_store, "t1")) == 6
    config, targets = read_run(sqlite_store, "t1")
    first = next(targets)
    assert config["model"] == "tiny" and first.game().shape == (256,)
    assert first.labels == tasks[0].targets[0].labels()

    monkeypatch.setattr("auditor.surfaces.cli.score_cmd.open_cli_store", lambda: sqlite_store)
    result = CliRunner().invoke(
        app, ["score", "report", "t1", "--out", str(tmp_path), "--resamples", "200", "--json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["n_targets"] == 6
    methods = {r["method"] for r in data["rows"]}
    assert methods == {"harsanyi", "shapley", "full", "leave_one_out", "first_order"}
    assert {r["top-K"] for r in data["rows"]} == {"50", "order 1"}
    assert (tmp_path / "t1.csv").read_text().startswith("method,top-K,cell,share")
    assert (tmp_path / "t1.png").stat().st_size > 1000


def test_report_of_unknown_run_is_one_line(sqlite_store, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("auditor.surfaces.cli.score_cmd.open_cli_store", lambda: sqlite_store)
    result = CliRunner().invoke(app, ["score", "report", "nope"])
    assert result.exit_code != 0
    assert "no scoring run 'nope'" in str(result.exception) + result.output

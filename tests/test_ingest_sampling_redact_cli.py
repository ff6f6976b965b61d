"""Corpus sampling, redaction at ingest, and the ingest/export/corpus commands end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ingest import Redactor, ingest_path
from ingest.sampling import freeze, sample_corpus
from tests.conftest import DATA, REPO
from tests.test_cli_foundation import run

HUMAN = DATA / "mast" / "MAD_human_labelled_dataset.json"


def _full_corpus(folder: Path) -> Path:
    """A full-corpus-shaped file built from the real human-labelled records (plus one re-spaced copy)."""
    records = json.loads(HUMAN.read_text())
    full = [
        {
            "mas_name": r["mas_name"],
            "llm_name": "GPT-4o",
            "benchmark_name": r["benchmark_name"],
            "trace_id": i,
            "trace": {"key": f"{r['mas_name']}_{r['benchmark_name']}", "index": i, "trajectory": r["trace"]},
            "mast_annotation": {"1.1": 1},
        }
        for i, r in enumerate(records)
    ]
    full.append(
        {
            **full[2],
            "trace_id": 99,
            "trace": {**full[2]["trace"], "trajectory": full[2]["trace"]["trajectory"] + "\n\n"},
        }
    )
    folder.mkdir()
    path = folder / "MAD_full_dataset.json"
    path.write_text(json.dumps(full))
    return path


def test_sample_excludes_duplicates_and_held_out_and_balances_strata(tmp_path, sqlite_store):
    root = tmp_path / "corpus"
    _full_corpus(root)
    held = tmp_path / "held.json"
    held.write_text(json.dumps(json.loads(HUMAN.read_text())[:1]))  # trace 0 (AppWorld R1) is held out
    m = sample_corpus(root, per_stratum=2, seed=20260906, held_out=held)
    # 20 records: ChatDev R1 = R2 byte-identical, record 99 = record 2 after whitespace → 2 duplicates.
    # Strata: five with >= 2 candidates (AppWorld 2 left after the held-out one, HyperAgent, AG2,
    # ChatDev/ProgramDev 2 distinct, MetaGPT/ProgramDev) give 2 each; four single ones give 1 → 14.
    assert m["counts"] == {
        "records": 20,
        "duplicates": 2,
        "held_out": 1,
        "no_text": 0,
        "candidates": 17,
        "drawn": 14,
    }
    assert all(v["drawn"] == min(2, v["candidates"]) for v in m["strata"].values())
    assert "Magentic-One/GAIA" in m["strata"] and "OpenManus/GAIA" in m["strata"]
    assert [c["position"] for c in m["cases"]] == list(range(14))
    again = sample_corpus(root, per_stratum=2, seed=20260906, held_out=held)
    assert again["digest"] == m["digest"]
    assert sample_corpus(root, per_stratum=2, seed=1, held_out=held)["digest"] != m["digest"]
    stream, new = freeze(sqlite_store, m)
    assert new and freeze(sqlite_store, again) == (stream, False)


def test_redaction_is_stable_and_never_stores_the_secret(tmp_path, sqlite_store):
    secret, email = "sk-proj-A1b2C3d4E5f6G7h8I9j0K1l2", "dana.ruiz@northwind.example"
    lines = [
        {"record": "header", "trace_id": "redact-me", "task": f"mail {email}"},
        {
            "step_id": "a",
            "index": 0,
            "actor": "ops",
            "content": f"key={secret}; call +1 415 555 0134; mail {email}",
        },
        {"step_id": "b", "index": 1, "actor": "ops", "content": "fetch https://bot:hunter22@db.internal/x"},
    ]
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    [first] = ingest_path(sqlite_store, path, redact=True)
    [again] = ingest_path(sqlite_store, path, redact=True)
    assert first.appended == 3 and again.appended == 0 and first.redacted["EMAIL"] == 1
    stored = json.dumps([e.payload for e in sqlite_store.read_all()])
    for value in (secret, email, "hunter22", "555 0134"):
        assert value not in stored
    assert "[REDACTED_EMAIL_1]" in stored and "[REDACTED_URL_PASSWORD_1]" in stored
    r = Redactor({"TICKET": r"(?P<value>TCK-\d{4})"})
    assert (
        r.text("TCK-1234 and TCK-1234, TCK-9999")
        == "[REDACTED_TICKET_1] and [REDACTED_TICKET_1], [REDACTED_TICKET_2]"
    )
    assert (
        Redactor().text("on 2025-03-31 at 20:33:34, version 0.4.9")
        == "on 2025-03-31 at 20:33:34, version 0.4.9"
    )


@pytest.mark.slow
def test_cli_dir_summary_auto_detection_export_and_corpus(tmp_path):
    corpus = tmp_path / "logs"
    corpus.mkdir()
    for name in ("07_Round2_AG2_GSM-Plus.json", "16_Generlazability_MetaGPT_MMLU.txt"):
        (corpus / name).write_bytes((DATA / "mast/derived/traces" / name).read_bytes())
    (corpus / "notes.md").write_text("# not a trace\n")
    (corpus / "broken.jsonl").write_text('{"step_id": "s0", "index": 0}\n')
    proc = run(["ingest", str(corpus), "--recursive", "--json"], tmp_path)
    assert proc.returncode == 2, proc.stderr  # one failure: the walk goes on, and exits 2
    out = json.loads(proc.stdout)
    assert out["totals"] | {} == {
        **out["totals"],
        "files": 4,
        "imported": 2,
        "traces": 2,
        "steps": 10,
        "skipped": 1,
        "failures": 1,
    }
    assert "field 'actor'" in out["failures"][0]["reason"]
    assert run(["ingest", str(corpus)], tmp_path).returncode == 2  # a folder needs --recursive
    single = run(["ingest", str(corpus / "07_Round2_AG2_GSM-Plus.json")], tmp_path)
    assert "importer: ag2 (" in single.stderr and "0 events appended" in single.stdout
    bad = run(["ingest", str(corpus / "notes.md")], tmp_path)
    assert bad.returncode == 2 and "valid" not in bad.stderr and "canonical, mad, whowhen" in bad.stderr
    trace_id = json.loads(
        run(["ingest", str(REPO / "examples/renewal_drift.jsonl"), "--json"], tmp_path).stdout
    )["trace_id"]
    exported = tmp_path / "out.jsonl"
    assert (
        run(["traces", "export", trace_id, "--format", "jsonl", "-o", str(exported)], tmp_path).returncode
        == 0
    )
    back = json.loads(run(["ingest", str(exported), "--json"], tmp_path).stdout)
    assert back["trace_id"] == trace_id and back["appended"] == 0
    root = tmp_path / "mad"
    _full_corpus(root)
    sampled = run(["corpus", "sample", str(root), "--per-stratum", "1", "--seed", "7", "--json"], tmp_path)
    manifest = json.loads(sampled.stdout)
    assert (
        sampled.returncode == 0 and manifest["new"] and manifest["counts"]["drawn"] == len(manifest["strata"])
    )
    assert not json.loads(
        run(["corpus", "sample", str(root), "--per-stratum", "1", "--seed", "7", "--json"], tmp_path).stdout
    )["new"]

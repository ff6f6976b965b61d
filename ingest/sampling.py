"""Corpus sampling for auditing a large corpus (the full MAD release), as the MAST study did it.

1. Candidates: every record of every MAD-shaped corpus file under a folder (streamed).
2. Exclusions: exact duplicates by normalised execution text (whitespace collapsed; the first
   occurrence is kept) and records whose normalised text also appears in a held-out labelled file.
3. Label-blind, balanced round-robin draw within framework-by-benchmark strata: each stratum's
   candidates are shuffled with the seed (labels are never read), then one case per stratum per
   round until each stratum has ``per_stratum`` cases (or runs out, or ``total`` is reached).
4. The manifest is frozen by its sha256 digest and appended as a ``CorpusSampleFrozen`` event
   before any audit; the same inputs give the same digest, so a re-run appends nothing and no case
   is ever replaced.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from auditor.core.errors import InputError
from ingest.base import file_digest, read_head
from ingest.frameworks import for_corpus_record
from ingest.mad import IMPORTER as MAD
from ingest.mad import corpus_key, corpus_text, iter_records

PROTOCOL = "mad-sample/1"


@dataclass(frozen=True)
class Candidate:
    file: str
    record_index: int
    key: str
    stratum: str
    llm: str | None
    text_sha256: str


def normalised_digest(text: str) -> str:
    return hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()


def _stratum(record: dict[str, Any], text: str) -> str:
    mas, bench = str(record.get("mas_name", "")), str(record.get("benchmark_name", ""))
    picked = for_corpus_record(mas, bench, text[:65536])
    framework = picked[0].framework if picked else mas
    if bench.strip().lower().replace("-one", "") in ("magentic", "openmanus"):  # MAD swapped the two
        bench = mas
    return f"{framework}/{bench}"


def corpus_files(root: Path, held_out: Path | None) -> list[Path]:
    files = []
    for path in sorted(root.rglob("*")):
        kept = path.is_file() and (held_out is None or path.resolve() != held_out.resolve())
        if kept and MAD.detect(path, read_head(path)):
            files.append(path)
    if not files:
        raise InputError(
            "no MAD-shaped corpus file under this folder",
            path=str(root),
            hint="expected a JSON array of records with 'mas_name' and 'trace'",
        )
    return files


def sample_corpus(
    root: Path, per_stratum: int, seed: int, held_out: Path | None = None, total: int | None = None
) -> dict[str, Any]:
    """The frozen sample manifest (with its ``digest``) for the corpus files under ``root``."""
    if per_stratum < 1:
        raise InputError("--per-stratum must be at least 1", field="per_stratum")
    excluded_held = (
        {normalised_digest(t) for _, r in iter_records(held_out) if (t := corpus_text(r))}
        if held_out
        else set()
    )
    seen: set[str] = set()
    strata: dict[str, list[Candidate]] = {}
    counts = {"records": 0, "duplicates": 0, "held_out": 0, "no_text": 0}
    files = corpus_files(root, held_out)
    for path in files:
        for n, record in iter_records(path):
            counts["records"] += 1
            text = corpus_text(record)
            if text is None:
                counts["no_text"] += 1
                continue
            digest = normalised_digest(text)
            if digest in seen:
                counts["duplicates"] += 1
                continue
            seen.add(digest)
            if digest in excluded_held:
                counts["held_out"] += 1
                continue
            cand = Candidate(
                str(path.relative_to(root)),
                n,
                corpus_key(record),
                _stratum(record, text),
                record.get("llm_name"),
                digest,
            )
            strata.setdefault(cand.stratum, []).append(cand)
    for name, cands in strata.items():
        cands.sort(key=lambda c: (c.file, c.record_index))
        random.Random(f"{seed}:{name}").shuffle(cands)
    cases: list[dict[str, Any]] = []
    for rnd in range(per_stratum):
        for name in sorted(strata):
            if rnd < len(strata[name]) and (total is None or len(cases) < total):
                c = strata[name][rnd]
                cases.append({"position": len(cases), "round": rnd, **c.__dict__})
    manifest = {
        "protocol": PROTOCOL,
        "seed": seed,
        "per_stratum": per_stratum,
        "total": total,
        "sources": [{"file": str(p.relative_to(root)), "sha256": file_digest(p)} for p in files],
        "held_out": {"file": str(held_out), "sha256": file_digest(held_out)} if held_out else None,
        "counts": {**counts, "candidates": sum(len(v) for v in strata.values()), "drawn": len(cases)},
        "strata": {
            k: {"candidates": len(v), "drawn": sum(1 for c in cases if c["stratum"] == k)}
            for k, v in sorted(strata.items())
        },
        "cases": cases,
    }
    digest = hashlib.sha256(json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    return {**manifest, "digest": f"sha256:{digest}"}


def freeze(store, manifest: dict[str, Any]) -> tuple[str, bool]:
    """Append the manifest as a ``CorpusSampleFrozen`` event; (stream id, whether it was new)."""
    from schemas.events import NewEvent

    digest = manifest["digest"].split(":", 1)[1]
    stream = f"corpus-sample-{digest[:16]}"
    before = store.stream_version(stream)
    store.append(
        stream,
        [
            NewEvent(
                type="CorpusSampleFrozen",
                payload={"manifest": manifest},
                idempotency_key=f"corpus-sample:{digest}",
            )
        ],
    )
    return stream, store.stream_version(stream) > before

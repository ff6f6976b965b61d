"""Episodes in the event store and on disk.

Store: the trace goes to ``trace-{id}`` (via auditor.core.store.traces), the labels to the sidecar
``labels-{id}``, and the episode record (spec, outcome, cohort) to ``world-episode-{id}``; a
cohort's manifest goes to ``world-cohort-{cohort_id}``. Disk: one canonical JSONL trace per
episode, a separate labels file, and a sanitiser manifest. The traces carry no labels, no
canaries and no condition names, so an audit of the bundle is condition-blind.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from auditor.core.errors import InputError, NotFoundError
from auditor.core.store.traces import append_trace, load_labels, load_trace
from schemas.events import NewEvent
from schemas.trace import LabelsRecord, Trace
from worlds.engine.cohort import Cohort
from worlds.engine.episode import EpisodeResult, EpisodeSpec, Outcome

EPISODE_EVENT = "WorldEpisodeRecorded"
COHORT_EVENT = "WorldCohortRecorded"
SANITISER = {
    "version": 2,
    "rules": [
        "trace headers carry only world, source digest and workflow digest in metadata",
        "labels (ground truth, judgments, key steps, canaries, condition, policy) are written to labels.jsonl only",
        "a trace whose header carries a canary token, or its condition name as a whole word, is refused",
    ],
}


def episode_stream(episode_id: str) -> str:
    return f"world-episode-{episode_id}"


def cohort_stream(cohort_id: str) -> str:
    return f"world-cohort-{cohort_id}"


def record_episode(store: Any, result: EpisodeResult, cohort_id: str | None = None) -> None:
    """Append one episode; re-recording the same episode appends nothing new."""
    append_trace(store, result.header, result.steps, labels=result.labels())
    payload = {
        "episode_id": result.episode_id,
        "cohort_id": cohort_id,
        "spec": result.spec.model_dump(mode="json"),
        "outcome": result.outcome.model_dump(mode="json"),
        "source_digest": result.source_digest,
    }
    store.append(
        episode_stream(result.episode_id),
        [NewEvent(type=EPISODE_EVENT, payload=payload, idempotency_key=f"world-episode:{result.episode_id}")],
    )


def record_cohort(store: Any, cohort: Cohort) -> str:
    for ep in cohort.episodes:
        record_episode(store, ep, cohort.cohort_id)
    manifest = cohort.manifest()
    store.append(
        cohort_stream(cohort.cohort_id),
        [NewEvent(type=COHORT_EVENT, payload=manifest, idempotency_key=f"world-cohort:{cohort.cohort_id}")],
    )
    return cohort.cohort_id


def _manifest(store: Any, stream: str) -> dict[str, Any] | None:
    """A cohort stream's manifest (its last event), or None for a stream without one."""
    manifest = None
    for ev in store.read_stream(stream):
        manifest = ev.payload
    return manifest


def stored_cohorts(store: Any) -> list[Cohort]:
    """Every recorded cohort rebuilt with its episodes (spec and outcome from the episode record,
    the trace from the store), as ``run_cohort`` returned it."""
    out = []
    for stream in store.list_streams("world-cohort-"):
        manifest = _manifest(store, stream)
        if manifest is None:
            continue
        episodes = []
        for eid in manifest["episode_ids"]:
            record = next(iter(store.read_stream(episode_stream(eid))), None)
            if record is None:  # a manifest is appended after its episodes: this store is damaged
                raise NotFoundError(f"episode {eid} of cohort {manifest['cohort_id']} is not in the store")
            p, trace = record.payload, load_trace(store, eid)
            episodes.append(
                EpisodeResult(
                    spec=EpisodeSpec.model_validate(p["spec"]),
                    header=trace.header,
                    steps=trace.steps,
                    outcome=Outcome.model_validate(p["outcome"]),
                    source_digest=p["source_digest"],
                )
            )
        out.append(
            Cohort(
                manifest["world"],
                manifest["policy"],
                manifest["policy_digest"],
                manifest["workflow_digest"],
                manifest["source_digest"],
                list(manifest["conditions"]),
                list(manifest["seeds"]),
                episodes,
                list(manifest.get("excluded", [])),
            )
        )
    return out


def load_cohort(store: Any, cohort_id: str) -> tuple[dict[str, Any], list[tuple[Trace, LabelsRecord]]]:
    manifest = _manifest(store, cohort_stream(cohort_id))
    if manifest is None:
        known = [s.removeprefix("world-cohort-") for s in store.list_streams("world-cohort-")]
        raise NotFoundError(
            f"no cohort {cohort_id!r} in the store",
            hint=f"known cohorts: {', '.join(known) or 'none; run auditor world run first'}",
        )
    pairs = []
    for eid in manifest["episode_ids"]:
        labels = load_labels(store, eid)
        if labels is None:
            raise NotFoundError(f"episode {eid} of cohort {cohort_id} has no labels in the store")
        pairs.append((load_trace(store, eid), labels))
    return manifest, pairs


def export_bundle(
    out: Path, pairs: list[tuple[Trace, LabelsRecord]], manifest: dict[str, Any] | None = None
) -> Path:
    """Write traces/<id>.jsonl, labels.jsonl and manifest.json; check sanitisation before writing anything."""
    rendered: list[tuple[str, str]] = []
    for trace, labels in pairs:
        text = "\n".join([trace.header.model_dump_json()] + [s.model_dump_json() for s in trace.steps]) + "\n"
        _check_sanitised(trace, labels)
        rendered.append((trace.header.trace_id, text))
    if out.exists() and not out.is_dir():
        raise InputError("export target exists and is not a folder", path=str(out))
    (out / "traces").mkdir(parents=True, exist_ok=True)
    files = {}
    for tid, text in rendered:
        (out / "traces" / f"{tid}.jsonl").write_text(text, encoding="utf-8")
        files[f"traces/{tid}.jsonl"] = hashlib.sha256(text.encode()).hexdigest()
    labels_text = "".join(lab.model_dump_json() + "\n" for _, lab in pairs)
    (out / "labels.jsonl").write_text(labels_text, encoding="utf-8")
    body = {
        "sanitiser": SANITISER,
        "files": files,
        "labels_sha256": hashlib.sha256(labels_text.encode()).hexdigest(),
        "cohort": {k: v for k, v in (manifest or {}).items() if k not in ("conditions",)},
    }
    (out / "manifest.json").write_text(json.dumps(body, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return out


def _check_sanitised(trace: Trace, labels: LabelsRecord) -> None:
    header = trace.header.model_dump_json()
    for secret in labels.labels.get("secrets", []):
        if secret in header:
            raise InputError(
                f"trace {trace.header.trace_id} carries a canary token in its header; refusing to export"
            )
    condition = labels.labels.get("condition")
    if condition and _names(trace.header.metadata, str(condition)):
        raise InputError(
            f"trace {trace.header.trace_id} names its condition in the header; refusing to export"
        )


def _names(value: Any, word: str) -> bool:
    """Whether a header's keys or values hold ``word`` as a whole word. A substring test refuses
    every B1 export: its conditions are the letters A–D, and "B" stands in the world's name "B1"."""
    if isinstance(value, dict):
        return any(_names(k, word) or _names(v, word) for k, v in value.items())
    if isinstance(value, list):
        return any(_names(v, word) for v in value)
    pattern = rf"(?<![A-Za-z0-9_]){re.escape(word)}(?![A-Za-z0-9_])"
    return re.search(pattern, str(value)) is not None

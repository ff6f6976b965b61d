"""Importers by name, and auto-detection that says which importer it chose and why.

Detection looks at the head of a file only (64 KiB). Importers are tried in registry order, most
specific first; fallback rules (the canonical importer's ``.jsonl`` extension) come after all. An unknown name, or a file no
importer recognises, is an input error that lists the valid names.
Such a file is described (its top-level keys, its first line's shape, or its first words), with the
closest importer's reason for declining it: an importer may offer ``near_miss(path, head)`` for that.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pydantic import ValidationError

from auditor.core.errors import InputError
from ingest import canonical, mad, whowhen
from ingest.base import HEAD_BYTES, ImportedTrace, Importer, read_head
from ingest.headshape import describe
from ingest.rawlog import RAW_IMPORTERS
from ingest.spans import SpanDocument

# The importers that read spans (ingest.spans), in registry order: those an OTLP document may go to.
SPAN_FORMATS = ("trail", "openinference", "vercel-ai", "otel-genai")

registry: dict[str, Importer] = {}


def register(importer: Importer) -> Importer:
    """Add an importer (plugins call this too); its name must be new."""
    if importer.name in registry:
        raise ValueError(f"importer '{importer.name}' is already registered")
    registry[importer.name] = importer
    return importer


def _register_builtins() -> None:
    from ingest import (
        aider,
        chat,
        claude_code,
        codex,
        codex_exec,
        cursor_agent,
        gemini_cli,
        goose,
        inspect_log,
        mini_swe_agent,
        opencode,
        openhands,
        openhands_sdk,
        openinference,
        otel,
        swe_agent,
        trail,
        vercel_ai,
    )

    for importer in (
        canonical.IMPORTER,
        mad.IMPORTER,
        whowhen.IMPORTER,
        trail.IMPORTER,
        openinference.IMPORTER,
        vercel_ai.IMPORTER,
        otel.IMPORTER,
        inspect_log.IMPORTER,
        swe_agent.IMPORTER,
        openhands_sdk.IMPORTER,
        openhands.IMPORTER,
        mini_swe_agent.IMPORTER,
        claude_code.IMPORTER,
        cursor_agent.IMPORTER,
        claude_code.STREAM_IMPORTER,
        codex.IMPORTER,
        codex_exec.IMPORTER,
        gemini_cli.IMPORTER,
        opencode.IMPORTER,
        goose.IMPORTER,
        aider.IMPORTER,
        *RAW_IMPORTERS,
        *chat.IMPORTERS,
    ):
        register(importer)


def names() -> list[str]:
    return list(registry)


def get(name: str) -> Importer:
    try:
        return registry[name]
    except KeyError:
        raise InputError(
            f"unknown format '{name}'",
            field="--input-format",
            hint=f"valid formats: auto, {', '.join(registry)}",
        ) from None


def _check_file(path: Path) -> None:
    if not path.exists():
        raise InputError("no such file", path=str(path), hint="check the path")
    if path.is_dir():
        raise InputError(
            "is a directory", path=str(path), hint="pass a file, or a directory with --recursive"
        )


def detect(path: Path) -> tuple[str, str]:
    """(importer name, reason) for a file, from its head; an InputError when nothing fits."""
    path = Path(path)
    _check_file(path)
    head = read_head(path)
    for name, importer in registry.items():
        reason = importer.detect(path, head)
        if reason:
            return name, reason
    for name, importer in registry.items():
        fallback = getattr(importer, "detect_fallback", None)
        reason = fallback(path) if fallback else None
        if reason:
            return name, reason
    raise _unrecognised(path, head)


def _unrecognised(path: Path, head: bytes) -> InputError:
    return InputError(
        f"no importer recognises this file: it holds {describe(head)}",
        path=str(path),
        hint=(
            f"{_closest(path, head)}; name the importer with --input-format, one of: {', '.join(registry)}"
        ),
    )


def _closest(path: Path, head: bytes) -> str:
    """The first importer whose optional ``near_miss(path, head)`` says why it declined the file."""
    for name, importer in registry.items():
        near_miss = getattr(importer, "near_miss", None)
        reason = near_miss(path, head) if near_miss else None
        if reason:
            return f"closest: {name}, which declined it because {reason}"
    return "no importer came close"


def open_traces(path: Path, fmt: str = "auto") -> Iterator[ImportedTrace]:
    """The traces in a file, streamed: many for a corpus file, one for a raw log."""
    path = Path(path)
    _check_file(path)
    yield from _opened(detect(path)[0] if fmt == "auto" else get(fmt).name, path)


def open_spans(document: SpanDocument) -> Iterator[ImportedTrace]:
    """The traces of an OTLP document held in memory (span assembly's), read by the span importer
    that ``auto`` picks for a file of its text; the error such a file gets when none takes it."""
    head = document.head(HEAD_BYTES)
    path = Path(document.name)
    for name in SPAN_FORMATS:
        if registry[name].detect(path, head):
            yield from _opened(name, document)
            return
    raise _unrecognised(path, head)


def _opened(name: str, source: Path | SpanDocument) -> Iterator[ImportedTrace]:
    try:
        yield from registry[name].open(source)  # type: ignore[arg-type]  # a span importer reads either
    except ValidationError as exc:  # a header an importer built from the source breaks the contract
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or None
        raise InputError(
            f"the {name} importer read a value the trace contract refuses: {first['msg']}",
            path=str(source),
            field=field,
            hint="docs/input.md says what trace ids and header fields may hold",
        ) from exc


_register_builtins()

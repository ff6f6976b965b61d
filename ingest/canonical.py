"""The native canonical JSONL format: an optional header line, then one step per line.

Reading streams line by line with a bounded line length (a line is a document: ingest.limits), so
a 1 GB file is never held whole and a single runaway line fails clearly instead of exhausting
memory. A file is checked completely before anything is appended, so bad input never leaves a
half-written trace.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from pydantic import ValidationError
from pydantic_core import to_json

from auditor.core.errors import InputError
from ingest import strictjson
from ingest.base import ImportedTrace, head_text
from ingest.textlines import bounded_lines
from schemas.trace import CANONICAL_FORMAT_VERSION, TraceHeader, TraceStep

_FIX = 'each line must be one JSON object: a header ({"record": "header", …}) first, then steps'

# The first key of a canonical record, for a first line that does not parse: it is then refused
# with its line and field, instead of being offered to formats that would not say why.
_LOOKS_CANONICAL = re.compile(r'\{\s*"(?:record"\s*:\s*"(?:header|step)"|step_id"\s*:)')

# Upgraders turn a record of version N into version N+1; applied one step at a time on read.
UPGRADERS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}


@dataclass(frozen=True)
class CanonicalScan:
    """What a full validation pass learned: the header (given or derived) and the step count.

    ``digest`` covers the normalised steps when the file has no header (it derives the trace id),
    and is the digest of nothing when a header names the trace."""

    header: TraceHeader
    steps: int
    digest: str


def _parse(raw: bytes, path: str, lineno: int, offset: int) -> dict[str, Any]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"not UTF-8 text at byte {exc.start} of the line", path=path, line=lineno, offset=offset
        ) from exc
    try:
        value = strictjson.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"malformed JSON: {exc.msg} (column {exc.colno})",
            path=path,
            line=lineno,
            offset=offset,
            hint=_FIX,
        ) from exc
    except strictjson.StrictJsonError as exc:
        raise InputError(
            str(exc), path=path, line=lineno, field=exc.field or None, hint="see docs/input.md"
        ) from exc
    if not isinstance(value, dict):
        raise InputError(
            f"expected a JSON object, found {type(value).__name__}", path=path, line=lineno, hint=_FIX
        )
    return value


def _validation_error(exc: ValidationError, path: str, lineno: int) -> InputError:
    first = exc.errors()[0]
    field = ".".join(str(p) for p in first["loc"]) or None
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    message = first["msg"].removeprefix("Value error, ")
    return InputError(f"{message}{more}", path=path, line=lineno, field=field)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:40]}… ({len(text):,} characters)"


def _version(record: dict[str, Any], path: str, lineno: int) -> int:
    """The header's format version: a whole number from 1 up (a bool, text or fraction is none)."""
    version = record.get("format_version", CANONICAL_FORMAT_VERSION)
    if type(version) is not int or version < 1:
        raise InputError(
            f"format_version {_shown(version)} is not a format version",
            path=path,
            line=lineno,
            field="format_version",
            hint=f"versions are whole numbers from 1; this tool writes {CANONICAL_FORMAT_VERSION}",
        )
    return version


def _kept_whole(step: TraceStep, raw: bytes) -> bool:
    """Whether the fast parse kept every key of the line: pydantic's parser keeps the last of
    repeated keys (its other liberties, NaN and ``1e400``, fail the step's own validation, and its
    depth limit is within ``strictjson.MAX_DEPTH``).

    Each key-value pair writes one colon and the rest stand in strings, literally or escaped as
    \\u003a, so what the line set holds as many colons as the line unless a repeated key's pair
    was lost. Any doubt (also an escaped backslash before 'u003a', harmlessly) sends the line to
    the strict parser. Written out flat: this runs for every step of every canonical file."""
    texts = [step.step_id, step.actor, step.content, step.timestamp or "", *(step.recipients or ())]
    kept = len(step.model_fields_set) + sum(t.count(":") for t in texts)
    try:
        if step.raw:
            kept += to_json(step.raw).count(b":")
        tool, refs = step.tool, step.refs
        if tool is not None:
            kept += len(tool.model_fields_set) + tool.name.count(":") + (tool.call_id or "").count(":")
            args = tool.arguments
            if args:
                kept += args.count(":") if isinstance(args, str) else to_json(args).count(b":")
        if refs is not None:
            kept += len(refs.model_fields_set) + (refs.reply_to or "").count(":")
            kept += (refs.call_id or "").count(":")
    except ValueError:  # a lone surrogate has no UTF-8 form: the strict path names the field
        return False
    escaped = raw.count(b"\\u003a") + raw.count(b"\\u003A")
    return kept == raw.count(b":") + escaped


def _upgrade(record: dict[str, Any], version: int, path: str, lineno: int) -> dict[str, Any]:
    if version > CANONICAL_FORMAT_VERSION:
        raise InputError(
            f"format_version {_shown(version)} is newer than this tool understands ({CANONICAL_FORMAT_VERSION})",
            path=path,
            line=lineno,
            field="format_version",
            hint="upgrade agent-auditor",
        )
    while version < CANONICAL_FORMAT_VERSION:
        record = UPGRADERS[version](record)
        version += 1
    return record


def _records(path: Path, scanned: bool = False) -> Iterator[tuple[int, TraceHeader | TraceStep]]:
    """The file's records. ``scanned``: the file passed ``scan_canonical`` already, so a line the
    fast parse reads is known to repeat no key (the ingest pipeline refuses a file that changed
    between its passes)."""
    name = str(path)
    version = CANONICAL_FORMAT_VERSION
    with path.open("rb") as stream:
        for lineno, offset, raw in bounded_lines(stream, name):
            if not raw.strip():
                continue
            if version == CANONICAL_FORMAT_VERSION and b'"header"' not in raw:
                try:  # fast path: pydantic parses the JSON itself; any doubt takes the strict path
                    step = TraceStep.model_validate_json(raw)
                except ValidationError:
                    pass
                else:
                    if scanned or _kept_whole(step, raw):
                        yield lineno, step
                        continue
            record = _parse(raw, name, lineno, offset)
            try:
                if record.get("record") == "header":
                    if lineno != 1:
                        raise InputError("a header may only be the first line", path=name, line=lineno)
                    version = _version(record, name, lineno)
                    yield lineno, TraceHeader.model_validate(_upgrade(record, version, name, lineno))
                else:
                    yield lineno, TraceStep.model_validate(_upgrade(record, version, name, lineno))
            except ValidationError as exc:
                raise _validation_error(exc, name, lineno) from exc


def scan_canonical(path: Path) -> CanonicalScan:
    """Validate the whole file: schema per line, unique step ids, gap-free indexes."""
    name = str(path)
    if not path.exists():
        raise InputError("no such file", path=name, hint="check the path")
    if path.is_dir():
        raise InputError("is a directory", path=name, hint="pass a trace file")
    digest = hashlib.sha256()
    header: TraceHeader | None = None
    seen: set[str] = set()
    count = 0
    for lineno, rec in _records(path):
        if isinstance(rec, TraceHeader):
            header = rec
            continue
        if rec.step_id in seen:
            raise InputError(f"duplicate step_id '{rec.step_id}'", path=name, line=lineno, field="step_id")
        if rec.index != count:
            raise InputError(
                f"index {_shown(rec.index)} out of order (expected {count})",
                path=name,
                line=lineno,
                field="index",
            )
        seen.add(rec.step_id)
        if header is None:  # the derived trace id hashes the normalised steps; a header names it
            digest.update(rec.model_dump_json().encode())
        count += 1
    if count == 0:
        raise InputError(
            "the file holds no steps", path=name, hint="a canonical trace needs at least one step"
        )
    hexdigest = digest.hexdigest()
    if header is None:
        header = TraceHeader(trace_id=f"t-{hexdigest[:16]}", source=path.name)
    return CanonicalScan(header, count, hexdigest)


def iter_canonical(path: Path) -> Iterator[TraceStep]:
    """Steps of an already scanned file, streamed."""
    for _, rec in _records(path, scanned=True):
        if isinstance(rec, TraceStep):
            yield rec


def write_canonical(header: TraceHeader, steps: Iterable[TraceStep], out: TextIO) -> int:
    """Write a trace in the canonical form (header line, then one step per line); returns the step
    count. Reading the output back yields the same header and steps."""
    out.write(header.model_dump_json() + "\n")
    count = 0
    for step in steps:
        out.write(step.model_dump_json() + "\n")
        count += 1
    return count


class CanonicalImporter:
    """The native format: validated in full on open, streamed on every pass after."""

    name = "canonical"
    description = (
        f"canonical JSONL trace (format version ≤ {CANONICAL_FORMAT_VERSION}; older upgraded on read)"
    )

    def detect(self, path: Path, head: bytes) -> str | None:
        first = head_text(head).lstrip().split("\n", 1)[0]
        try:
            record = json.loads(first)
        except (ValueError, RecursionError):  # cut at the head's end, or a hostile number or nesting
            if _LOOKS_CANONICAL.match(first):
                return "the first line opens as a canonical header or step record"
            return None
        if isinstance(record, dict) and (record.get("record") in ("header", "step") or "step_id" in record):
            return "the first line is a canonical header or step record"
        return None

    def detect_fallback(self, path: Path) -> str | None:
        """Tried only after every importer's ``detect`` declined the file."""
        if path.suffix.lower() in (".jsonl", ".ndjson"):
            return f"the '{path.suffix}' extension (no other format claims the file)"
        return None

    def open(self, path: Path) -> Iterator[ImportedTrace]:
        scan = scan_canonical(path)
        yield ImportedTrace(
            importer=self.name,
            header=scan.header,
            steps=lambda _facts: iter_canonical(path),
            step_count=scan.steps,
        )


IMPORTER = CanonicalImporter()

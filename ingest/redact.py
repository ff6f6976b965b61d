"""Redaction at ingest: secrets and personal identifiers become stable placeholders before storage.

Placeholders are numbered per trace by first appearance (``[REDACTED_EMAIL_1]``), so the same value
gets the same placeholder everywhere in a trace and a re-import produces identical steps (and so
appends nothing new). The value-to-placeholder mapping lives only in memory for one trace and is
never stored or returned. Every path into the store applies it when asked: ``auditor ingest``,
``auditor review`` and the HTTP API (``auditor.audit.review.review_file``), and the Kafka consumer
(``ingest.stream_redact``).

Every string that will be stored is redacted, object keys included, at any depth; only the few
top-level fields of a record that are structure (its kind, index, time, trace id: ``STRUCTURAL``)
are kept, never a value of the same name deeper down. A string holding a JSON object or array is
redacted as its decoded value (a key spelled ``sk\u002dproj-…`` is caught) and written back as
JSON; a value under a key that names a secret (``password``, ``aws_secret_access_key``) is replaced
whole, since decoding took away the ``key=`` the text patterns need.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from auditor.core.errors import InputError
from schemas.trace import LabelsRecord, Trace, TraceHeader, TraceStep

# Names of settings whose value is a secret, as a key (``"password": …``) or in text (``pwd=…``).
_SECRET_NAMES = (
    r"(?:aws[_-]?)?secret[_-]?access[_-]?key|client[_-]?secret|private[_-]?key|api[_-]?key"
    r"|secret(?:[_-]?key)?|(?:access|auth|refresh|session|api)[_-]?token|token|password|passwd|pwd"
)
# Secrets first (a URL password or a key inside an e-mail-like string wins over the e-mail rule).
SECRET_PATTERNS: dict[str, str] = {
    "URL_PASSWORD": r"(?<=://)[^\s:/@]+:(?P<value>[^\s@/]+)(?=@)",
    "API_KEY": (
        r"\b(?P<value>sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{16,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{30,}"
        r"|github_pat_\w{22,}|xox[abprs]-[A-Za-z0-9\-]{10,}|AIza[0-9A-Za-z_\-]{35}|hf_[A-Za-z0-9]{30,})"
    ),
    "JWT": r"\b(?P<value>eyJ[\w\-]{8,}\.[\w\-]{8,}\.[\w\-]{8,})",
    "BEARER_TOKEN": r"(?i)\bbearer\s+(?P<value>[A-Za-z0-9._~+/\-]{16,}=*)",
    "PRIVATE_KEY": (  # PEM, its END line optional (a key cut short); \\ for newlines written \\n
        r"(?P<value>-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----[A-Za-z0-9+/=\s\\]*"
        r"(?:-----END[A-Z0-9 ]*PRIVATE KEY-----)?)"
    ),
    "SECRET": (
        rf"(?i)(?<![a-z0-9])(?:{_SECRET_NAMES})(?![a-z0-9])[\"']?\s*[:=]\s*[\"']?(?P<value>[^\s\"',;]{{6,}})"
    ),
}
PII_PATTERNS: dict[str, str] = {  # \w: any script's letters, so "bücher.example" is a domain too
    "EMAIL": r"(?P<value>(?<![\w.%+\-])[\w.%+\-]+@(?:[\w\-]+\.)+[^\W\d_][\w\-]+)(?![\w\-])",
    "PHONE": r"(?<![\w.+\-])(?P<value>\+?\d{1,3}?[ .\-]?\(?\d{2,4}\)?[ .\-]\d{3,4}[ .\-]\d{3,4})(?![\w\-])",
}
STRUCTURAL = {"record", "index", "kind", "actor_kind", "timestamp", "format_version", "trace_id"}
# A key naming a secret: the names above but ``token`` and ``pwd`` (a logprob's token, a shell's
# working directory), whose text form ``token=…`` still counts.
_KEY_NAMES = _SECRET_NAMES.replace("|token|", "|").replace("|pwd", "")
_SECRET_KEY = re.compile(rf"(?i)(?:^|[^a-z0-9])(?:{_KEY_NAMES})$")
_ESCAPE = re.compile(r"\\u(?![dD][89a-fA-F])([0-9a-fA-F]{4})")  # JSON's \uXXXX, no surrogate
_PLACED = re.compile(r"\[REDACTED_([^\[\]\s]+?)_(\d+)\]")


def names_secret(key: str) -> bool:
    """Whether a value stored under ``key`` is a secret (``password``, ``x-api-key``)."""
    return _SECRET_KEY.search(key) is not None


def _phone_like(value: str) -> bool:
    digits = sum(c.isdigit() for c in value)
    return 9 <= digits <= 15


class Redactor:
    """Replaces matches with numbered placeholders; one instance per trace and pass."""

    def __init__(self, extra: dict[str, str] | None = None) -> None:
        patterns = {**SECRET_PATTERNS, **PII_PATTERNS, **(extra or {})}
        self._rules = [(name.upper(), re.compile(rx)) for name, rx in patterns.items()]
        self._seen: dict[tuple[str, str], str] = {}
        self._counts: dict[str, int] = {}
        self._after: dict[str, int] = {}  # numbers already used in the store (see number_after)

    def _placeholder(self, kind: str, value: str) -> str:
        key = (kind, value)
        if key not in self._seen:
            self._counts[kind] = self._counts.get(kind, 0) + 1
            self._seen[key] = f"[REDACTED_{kind}_{self._after.get(kind, 0) + self._counts[kind]}]"
        return self._seen[key]

    def text(self, text: str) -> str:
        """``text`` redacted; one holding a JSON object or array, redacted as its decoded value."""
        body = text.strip()
        if body[:1] in ("{", "[") and body[-1:] in ("}", "]"):
            try:
                decoded = json.loads(body)
            except (ValueError, RecursionError):
                decoded = None
            if isinstance(decoded, dict | list):
                redacted = self.value(decoded)
                if redacted == decoded:
                    return text
                start = text.index(body[0])
                return text[:start] + json.dumps(redacted, ensure_ascii=False) + text[start + len(body) :]
        if "\\u" in text:  # escapes that spell a secret (sk\u002dproj-…) are read as what they spell
            plain = _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text)
            if self._match(plain) is not None:
                text = plain
        for kind, rx in self._rules:
            text = rx.sub(self._replacer(kind), text)
        return text

    def _replacer(self, kind: str) -> Callable[[re.Match[str]], str]:
        def replace(m: re.Match[str]) -> str:
            group = "value" if "value" in m.re.groupindex else 0
            value = m.group(group)
            if kind == "PHONE" and not _phone_like(value):
                return m.group(0)
            start, end = m.span(group)
            whole = m.group(0)
            return whole[: start - m.start()] + self._placeholder(kind, value) + whole[end - m.start() :]

        return replace

    def value(self, value: Any) -> Any:
        """A JSON value with every string redacted, object keys too, at any depth."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(k): self.keyed(k, v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(v) for v in value]
        return value

    def keyed(self, key: str, value: Any) -> Any:
        """``value`` stored under ``key``: replaced whole where the key names a secret."""
        if isinstance(value, str) and value.strip() and names_secret(key):
            return self._placeholder("SECRET", value)
        return self.value(value)

    def record(self, record: dict[str, Any]) -> dict[str, Any]:
        """A record's fields redacted, but for its ``STRUCTURAL`` ones (at its top level only).
        A trace id is the store's key and cannot be redacted: one that holds a match is refused."""
        trace_id = record.get("trace_id")
        found = self._match(trace_id) if isinstance(trace_id, str) else None
        if found is not None:
            raise InputError(
                f"the trace id holds a value that --redact removes ({found})",
                field="trace_id",
                hint="give the trace another id (--trace-id)",
            )
        return {k: v if k in STRUCTURAL else self.keyed(k, v) for k, v in record.items()}

    def _match(self, text: str) -> str | None:
        """The kind of the first value ``text`` would have redacted, if any."""
        for kind, rx in self._rules:
            for m in rx.finditer(text):
                if kind != "PHONE" or _phone_like(m.group("value" if "value" in rx.groupindex else 0)):
                    return kind
        return None

    def header(self, header: TraceHeader) -> TraceHeader:
        return TraceHeader.model_validate(self.record(header.model_dump(mode="json")))

    def step(self, step: TraceStep) -> TraceStep:
        return TraceStep.model_validate(self.record(step.model_dump(mode="json")))

    def labels(self, labels: LabelsRecord) -> LabelsRecord:
        return LabelsRecord.model_validate(self.record(labels.model_dump(mode="json")))

    def trace(self, trace: Trace) -> Trace:
        return Trace(header=self.header(trace.header), steps=[self.step(s) for s in trace.steps])

    def number_after(self, text: str) -> None:
        """Number new placeholders after those already in ``text`` (what an earlier pass, whose
        mapping is gone, stored of this trace), so that two values never share a placeholder."""
        for m in _PLACED.finditer(text):
            kind, n = m.group(1), int(m.group(2))
            self._after[kind] = max(self._after.get(kind, 0), n)

    @property
    def replaced(self) -> dict[str, int]:
        """How many distinct values of each kind were replaced (counts only, never values)."""
        return dict(self._counts)

"""Redaction at ingest: secrets and personal identifiers become stable placeholders before storage.

Placeholders are numbered per trace by first appearance (``[REDACTED_EMAIL_1]``), so the same value
gets the same placeholder everywhere in a trace and a re-import produces identical steps (and so
appends nothing new). The value-to-placeholder mapping lives only in memory for one trace and is
never stored or returned. Every path into the store applies it when asked: ``auditor ingest``,
``auditor review`` and the HTTP API (``auditor.review.review_file``), and the Kafka consumer
(``ingest.stream_redact``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from schemas.trace import LabelsRecord, Trace, TraceHeader, TraceStep

# Secrets first (a URL password or a key inside an e-mail-like string wins over the e-mail rule).
SECRET_PATTERNS: dict[str, str] = {
    "URL_PASSWORD": r"(?<=://)[^\s:/@]+:(?P<value>[^\s@/]+)(?=@)",
    "API_KEY": (
        r"\b(?P<value>sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{16,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{30,}"
        r"|github_pat_\w{22,}|xox[abprs]-[A-Za-z0-9\-]{10,}|AIza[0-9A-Za-z_\-]{35}|hf_[A-Za-z0-9]{30,})"
    ),
    "JWT": r"\b(?P<value>eyJ[\w\-]{8,}\.[\w\-]{8,}\.[\w\-]{8,})",
    "BEARER_TOKEN": r"(?i)\bbearer\s+(?P<value>[A-Za-z0-9._~+/\-]{16,}=*)",
    "SECRET": (
        r"(?i)\b(?:api[_-]?key|secret(?:[_-]?key)?|access[_-]?token|auth[_-]?token|token|password|passwd|pwd)"
        r"\b[\"']?\s*[:=]\s*[\"']?(?P<value>[^\s\"',;]{6,})"
    ),
}
PII_PATTERNS: dict[str, str] = {
    "EMAIL": r"(?P<value>\b[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}\b)",
    "PHONE": r"(?<![\w.+\-])(?P<value>\+?\d{1,3}?[ .\-]?\(?\d{2,4}\)?[ .\-]\d{3,4}[ .\-]\d{3,4})(?![\w\-])",
}
_KEEP = {"record", "step_id", "index", "kind", "actor_kind", "timestamp", "format_version", "trace_id"}
_PLACED = re.compile(r"\[REDACTED_([^\[\]\s]+?)_(\d+)\]")


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

    def value(self, value: Any, key: str | None = None) -> Any:
        if key in _KEEP:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.value(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(v) for v in value]
        return value

    def header(self, header: TraceHeader) -> TraceHeader:
        return TraceHeader.model_validate(self.value(header.model_dump(mode="json")))

    def step(self, step: TraceStep) -> TraceStep:
        return TraceStep.model_validate(self.value(step.model_dump(mode="json")))

    def labels(self, labels: LabelsRecord) -> LabelsRecord:
        return LabelsRecord.model_validate(self.value(labels.model_dump(mode="json")))

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

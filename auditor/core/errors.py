"""A small error hierarchy. A user mistake becomes one clear line on the CLI, never a traceback.

Every message names the file, line and field where it can, and says how to fix the problem.
"""

from __future__ import annotations


class AuditorError(Exception):
    """Base of every error the tool raises on purpose."""

    exit_code = 2
    hint: str | None = None

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        if hint is not None:
            self.hint = hint

    def one_line(self) -> str:
        text = str(self)
        return f"{text} ({self.hint})" if self.hint else text


class InputError(AuditorError):
    """Bad user input: a file, a line, a field. Exit code 2."""

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        field: str | None = None,
        offset: int | None = None,
        hint: str | None = None,
    ) -> None:
        self.path, self.line, self.field, self.offset = path, line, field, offset
        where = []
        if path is not None:
            where.append(str(path))
        if line is not None:
            where.append(f"line {line}")
        if offset is not None:
            where.append(f"byte {offset}")
        if field is not None:
            where.append(f"field '{field}'")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message, hint=hint)


class ContractError(AuditorError):
    """Data that breaks a contract in schemas/ (a report, an event payload)."""


class StoreError(AuditorError):
    """The event store refused or failed an operation."""


class ConcurrencyError(StoreError):
    """An append stated a stream version that is no longer current."""

    def __init__(self, stream_id: str, expected: int, actual: int) -> None:
        self.stream_id, self.expected, self.actual = stream_id, expected, actual
        super().__init__(
            f"stream '{stream_id}' is at version {actual}, but the append expected {expected}",
            hint="re-read the stream and retry the append",
        )


class TraceConflictError(AuditorError):
    """A document names a stored trace but holds other content: one trace id has one history, so
    it is refused, never merged (exit code 2, HTTP 409)."""


class NotFoundError(AuditorError):
    """A trace, report or stream that the user named does not exist."""


class VerificationFailed(AuditorError):
    """A verification (hash chain, report validation) found a problem. Exit code 1."""

    exit_code = 1

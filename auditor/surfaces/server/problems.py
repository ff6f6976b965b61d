"""Errors as RFC 9457 problem details, with the same one-line message the CLI prints.

An ``AuditorError`` keeps its meaning over HTTP: bad input is 400, an unknown trace 404, a broken
contract 422, a store conflict 409, an unreachable store 503. Anything unexpected is a 500 whose
body says nothing of the internals (the traceback goes to the server log).
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from auditor.core.errors import (
    AuditorError,
    ConcurrencyError,
    ContractError,
    InputError,
    NotFoundError,
    StoreError,
    TraceConflictError,
    VerificationFailed,
)

log = logging.getLogger("auditor.surfaces.server")
PROBLEM_TYPE = "application/problem+json"

_STATUS: list[tuple[type[AuditorError], int, str]] = [
    (InputError, 400, "invalid-input"),
    (NotFoundError, 404, "not-found"),
    (ConcurrencyError, 409, "conflict"),
    (TraceConflictError, 409, "trace-conflict"),
    (ContractError, 422, "contract-violation"),
    (VerificationFailed, 422, "verification-failed"),
    (StoreError, 503, "store-unavailable"),
]
_TITLES = {
    400: "Bad request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not found",
    405: "Method not allowed",
    409: "Conflict",
    413: "Request too large",
    422: "Unprocessable content",
    500: "Internal server error",
    503: "Service unavailable",
}


class Problem(Exception):
    """An error the server answers with directly: status, a stable code and one line of detail."""

    def __init__(self, status: int, code: str, detail: str) -> None:
        super().__init__(detail)
        self.status, self.code, self.detail = status, code, detail


def problem_response(status: int, code: str, detail: str, instance: str) -> JSONResponse:
    headers = {"WWW-Authenticate": 'Bearer realm="auditor"'} if status == 401 else None
    body = {
        "type": f"urn:auditor:problem:{code}",
        "title": _TITLES.get(status, "Error"),
        "status": status,
        "detail": detail,
        "instance": instance,
    }
    return JSONResponse(body, status_code=status, media_type=PROBLEM_TYPE, headers=headers)


def _status_of(exc: AuditorError) -> tuple[int, str]:
    for cls, status, code in _STATUS:
        if isinstance(exc, cls):
            return status, code
    return 400, "error"


def _validation_line(exc: RequestValidationError) -> str:
    """One line naming the first bad parameter, as the CLI names a bad option."""
    errors = exc.errors()
    if not errors:
        return "the request is invalid"
    first = errors[0]
    where = [str(p) for p in first.get("loc", ()) if p not in ("query", "path", "body", "header")]
    kind = next((p for p in first.get("loc", ()) if p in ("query", "path", "header")), "body")
    name = ".".join(where) or kind
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{kind} parameter '{name}': {first.get('msg', 'invalid')}{more}"


def install_handlers(app: FastAPI) -> None:
    """Route every error the app can raise to a problem-details body."""

    @app.exception_handler(Problem)
    async def _problem(request: Request, exc: Problem) -> JSONResponse:
        return problem_response(exc.status, exc.code, exc.detail, request.url.path)

    @app.exception_handler(AuditorError)
    async def _auditor(request: Request, exc: AuditorError) -> JSONResponse:
        status, code = _status_of(exc)
        return problem_response(status, code, exc.one_line(), request.url.path)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return problem_response(400, "invalid-input", _validation_line(exc), request.url.path)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not-found", 405: "method-not-allowed", 413: "too-large"}.get(exc.status_code, "error")
        detail = exc.detail if isinstance(exc.detail, str) else _TITLES.get(exc.status_code, "error")
        if exc.status_code == 404 and detail == "Not Found":
            detail = f"no such endpoint: {request.method} {request.url.path}"
        return problem_response(exc.status_code, code, detail, request.url.path)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return problem_response(500, "internal", "internal error (see the server log)", request.url.path)

"""ASGI middleware: a cap on request bodies, and security headers on every response.

No CORS middleware is installed: a page on another origin cannot read the API's answers.
"""

from __future__ import annotations

import json
from typing import Any

Scope = dict[str, Any]
CONSOLE_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
_SECURITY = [
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
]


class BodyLimit:
    """Refuse request bodies over ``max_bytes`` with 413, whether or not they state a length."""

    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await _too_large(scope, send, self.max_bytes)
            return
        seen = 0
        started = False

        async def limited_receive() -> dict:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise _TooLarge
            return message

        async def tracking_send(message: dict) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _TooLarge:
            if not started:
                await _too_large(scope, send, self.max_bytes)


class _TooLarge(Exception):
    pass


async def _too_large(scope: Scope, send: Any, limit: int) -> None:
    body = json.dumps(
        {
            "type": "urn:auditor:problem:too-large",
            "title": "Request too large",
            "status": 413,
            "detail": f"the request body exceeds the server's limit of {limit} bytes (see 'auditor serve --max-body')",
            "instance": scope.get("path", ""),
        }
    ).encode()
    headers = [(b"content-type", b"application/problem+json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class SecurityHeaders:
    """nosniff, no referrer, no framing; the console's pages get a strict Content-Security-Policy
    (scripts and styles from this server only: no inline script can run even if markup slipped in)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: dict) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                names = {k.lower() for k, _ in headers}
                headers += [(k, v) for k, v in _SECURITY if k not in names]
                if b"content-security-policy" not in names:
                    headers.append((b"content-security-policy", CONSOLE_CSP.encode()))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)

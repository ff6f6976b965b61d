"""Who is asking: bearer tokens (or the console's session cookie) checked against the token stream.

A request without a token, or with an unknown or revoked one, is refused with 401; a valid token
without the scope an endpoint needs gets 403. The cookie counts for reads (GET/HEAD), and for a
write only when the console's own script sends it: with the ``X-Auditor-Console`` header, which a
page on another site cannot add (a cross-origin request with it needs a CORS preflight this server
never grants), and from this server's origin where the browser names one. So a page elsewhere
cannot make a signed-in browser change anything.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from urllib.parse import urlsplit

from fastapi import Request

from auditor.core.store import EventStore
from auditor.surfaces.server.problems import Problem
from auditor.surfaces.server.tokens import TOKENS_STREAM, TokenRecord, load_tokens, matches, token_id_of

COOKIE = "auditor_token"
CONSOLE_HEADER = "x-auditor-console"
_SAFE_METHODS = ("GET", "HEAD")


@dataclass(frozen=True)
class Principal:
    token_id: str
    name: str
    scopes: tuple[str, ...]


class TokenCache:
    """The token records, reloaded when the token stream grows. Its version is looked up only
    when the store's head has moved since the last look (a token event moves it too)."""

    def __init__(self, store: EventStore) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._version = -1
        self._head = -1
        self._tokens: dict[str, TokenRecord] = {}

    def lookup(self, token: str, head: int | None = None) -> TokenRecord | None:
        """The active record of ``token``; ``head`` is the store's last position, if just read."""
        token_id = token_id_of(token)
        if token_id is None:
            return None
        if head is None or head != self._head:
            version = self._store.stream_version(TOKENS_STREAM)  # read after the head: as new or newer
            with self._lock:
                if version != self._version:
                    self._tokens = load_tokens(self._store)
                    self._version = version
                self._head = -1 if head is None else head
        record = self._tokens.get(token_id)
        if record is None or not record.active or not matches(record, token):
            return None
        return record


def presented_token(request: Request) -> str | None:
    """The bearer token of the request, or the session cookie on a read or a console write."""
    header = request.headers.get("authorization")
    if header:
        scheme, _, value = header.partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            raise Problem(401, "unauthorized", "the Authorization header must read 'Bearer <token>'")
        return value.strip()
    if request.method in _SAFE_METHODS or _from_console(request):
        return request.cookies.get(COOKIE)
    return None


def _from_console(request: Request) -> bool:
    """A write sent by the console's script (see the module docstring)."""
    return request.headers.get(CONSOLE_HEADER) == "1" and same_origin(request)


def same_origin(request: Request) -> bool:
    """Whether a browser that names the request's origin names this server's: its host, not its
    scheme (TLS may end at a proxy). A request naming none is not a browser's cross-site one."""
    origin = request.headers.get("origin")
    return origin is None or urlsplit(origin).netloc == request.headers.get("host")


def authenticate(request: Request, scope: str) -> Principal:
    """The principal behind the request, if its token is valid and carries ``scope``."""
    cache: TokenCache = request.app.state.tokens
    token = presented_token(request)
    if not token:
        raise Problem(
            401, "unauthorized", "a bearer token is required (create one with 'auditor tokens create')"
        )
    record = cache.lookup(token, request.app.state.head(request))
    if record is None:
        raise Problem(401, "unauthorized", "the token is unknown or revoked (see 'auditor tokens list')")
    if scope not in record.scopes:
        raise Problem(
            403,
            "forbidden",
            f"the token '{record.name}' lacks the '{scope}' scope "
            f"(it has: {', '.join(record.scopes)}; create one with --scope {scope})",
        )
    return Principal(record.token_id, record.name, record.scopes)


def require(scope: str):  # -> a FastAPI dependency
    """A dependency that admits requests whose token carries ``scope``."""

    def dependency(request: Request) -> Principal:
        return authenticate(request, scope)

    dependency.__name__ = f"require_{scope}"
    return dependency

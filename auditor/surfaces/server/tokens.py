"""API tokens as events: ``TokenCreated`` and ``TokenRevoked`` in stream ``tokens``.

The store keeps only a sha256 digest of each token, never the token itself: the plain text is
shown once, when it is created. A token reads ``aud_<id>_<secret>``; the id finds the record, the
digest of the whole token proves it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from auditor.core.errors import InputError, NotFoundError
from auditor.core.store import EventStore
from schemas.events import NewEvent

TOKENS_STREAM = "tokens"
SCOPES = ("read", "ingest", "repair", "metrics", "review")
_PREFIX = "aud_"


@dataclass(frozen=True)
class TokenRecord:
    """What the store knows about a token: never its plain text."""

    token_id: str
    name: str
    scopes: tuple[str, ...]
    digest: str
    created_at: str
    revoked_at: str | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    def public(self) -> dict[str, object]:
        """The record without its digest, for listings."""
        return {
            "token_id": self.token_id,
            "name": self.name,
            "scopes": list(self.scopes),
            "created_at": self.created_at,
            "revoked_at": self.revoked_at,
        }


def token_digest(token: str) -> str:
    return "sha256:" + hashlib.sha256(token.encode()).hexdigest()


def parse_scopes(values: Iterable[str]) -> tuple[str, ...]:
    """Scopes from option values ('read', 'read,ingest'); an unknown scope names the valid ones."""
    scopes: list[str] = []
    for value in values:
        for part in value.split(","):
            scope = part.strip()
            if not scope:
                continue
            if scope not in SCOPES:
                raise InputError(
                    f"unknown scope '{scope}'", field="--scope", hint=f"valid scopes: {', '.join(SCOPES)}"
                )
            if scope not in scopes:
                scopes.append(scope)
    if not scopes:
        raise InputError("a token needs at least one scope", field="--scope", hint="e.g. --scope read")
    return tuple(scopes)


def create_token(store: EventStore, name: str, scopes: Iterable[str]) -> tuple[str, TokenRecord]:
    """Mint a token; returns the plain text (shown once) and the stored record."""
    if not name.strip():
        raise InputError("a token needs a name", field="--name", hint="e.g. --name ci-reader")
    chosen = parse_scopes(scopes)
    token_id = secrets.token_hex(6)
    plain = f"{_PREFIX}{token_id}_{secrets.token_urlsafe(32)}"
    record = TokenRecord(token_id, name.strip(), chosen, token_digest(plain), _now())
    payload = {
        "token_id": token_id,
        "name": record.name,
        "scopes": list(chosen),
        "digest": record.digest,
        "created_at": record.created_at,
    }
    store.append(
        TOKENS_STREAM,
        [NewEvent(type="TokenCreated", payload=payload, idempotency_key=f"token:{token_id}:created")],
    )
    return plain, record


def revoke_token(store: EventStore, token_id: str) -> TokenRecord:
    """Revoke a token by id; revoking twice is a no-op that returns the same record."""
    known = load_tokens(store)
    record = known.get(token_id)
    if record is None:
        raise NotFoundError(f"no token with id '{token_id}'", hint="run 'auditor tokens list'")
    if record.revoked_at is not None:
        return record
    at = _now()
    store.append(
        TOKENS_STREAM,
        [
            NewEvent(
                type="TokenRevoked",
                payload={"token_id": token_id, "revoked_at": at},
                idempotency_key=f"token:{token_id}:revoked",
            )
        ],
    )
    return TokenRecord(**{**record.__dict__, "revoked_at": at})


def load_tokens(store: EventStore) -> dict[str, TokenRecord]:
    """Every token ever created, by id, with its revocation if any (rebuilt from the stream)."""
    out: dict[str, TokenRecord] = {}
    for ev in store.read_stream(TOKENS_STREAM):
        p = ev.payload
        if ev.type == "TokenCreated":
            out[p["token_id"]] = TokenRecord(
                p["token_id"], p["name"], tuple(p["scopes"]), p["digest"], p["created_at"]
            )
        elif ev.type == "TokenRevoked" and p["token_id"] in out:
            out[p["token_id"]] = TokenRecord(**{**out[p["token_id"]].__dict__, "revoked_at": p["revoked_at"]})
    return out


def token_id_of(token: str) -> str | None:
    """The id part of a well-formed token, else None."""
    if not token.startswith(_PREFIX):
        return None
    token_id, sep, secret = token[len(_PREFIX) :].partition("_")
    return token_id if sep and token_id and secret else None


def matches(record: TokenRecord, token: str) -> bool:
    """Constant-time comparison of the token's digest with the stored one."""
    return hmac.compare_digest(record.digest, token_digest(token))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")

"""Signed checkpoints of the chain's head: the anchor that lies outside the database.

The hash chain alone proves only that the events agree with each other: whoever can write to the
database can recompute every hash after an edit, or cut events off the end, and the chain still
reads intact. A checkpoint is the head (position, hash) signed with HMAC-SHA256 under a key the
database does not hold, appended as one JSON line to a file the user names. ``verify`` then
checks the chain against every checkpoint: a rewrite at or before an anchored position changes
that position's hash, and a truncation leaves the chain shorter than the anchor.

Checkpoints live in the file only, not in the store as well: a copy in the database would be
exactly as removable as the events it anchors, and verify must never trust it. The file should
sit where the database's writers cannot reach (another host, an append-only or WORM volume).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from auditor.core.errors import InputError, VerificationFailed
from auditor.core.store.eventstore import EventStore
from auditor.core.store.hashing import canonical_json
from auditor.core.store.verify import verify_chain

KEY_FILE_ENV = "AUDITOR_CHECKPOINT_KEY_FILE"
FILE_ENV = "AUDITOR_CHECKPOINT_FILE"
EVERY_ENV = "AUDITOR_CHECKPOINT_EVERY"
DEFAULT_EVERY_S = 300.0
MIN_KEY_BYTES = 32
FORMAT = 1
_HEX64 = frozenset("0123456789abcdef")


def key_id(key: bytes) -> str:
    """A short public name of a key, so that a checkpoint signed with another key is told apart
    from a forged one."""
    return hashlib.sha256(b"auditor-checkpoint-key:" + key).hexdigest()[:16]


def load_key(path: str | Path | None) -> bytes:
    """The signing key from ``path``, else from the file AUDITOR_CHECKPOINT_KEY_FILE names."""
    given = path or os.environ.get(KEY_FILE_ENV)
    if not given:
        raise InputError(
            "no checkpoint key: checkpoints are signed with a key the database does not hold",
            field="--key-file",
            hint=f"pass --key-file FILE or set {KEY_FILE_ENV}; 'auditor store keygen FILE' makes a key",
        )
    key_path = Path(given).expanduser()
    try:
        key = key_path.read_bytes().strip()
    except FileNotFoundError:
        raise InputError(
            "the checkpoint key file does not exist",
            path=str(key_path),
            hint="'auditor store keygen FILE' makes a key",
        ) from None
    except OSError as exc:
        raise InputError(f"cannot read the checkpoint key: {exc.strerror}", path=str(key_path)) from None
    if len(key) < MIN_KEY_BYTES:
        raise InputError(
            f"the checkpoint key holds {len(key)} bytes; at least {MIN_KEY_BYTES} are needed",
            path=str(key_path),
            hint="'auditor store keygen FILE' makes a key",
        )
    return key


def generate_key(path: Path) -> str:
    """Write a new random key (readable by its owner only) to a file that must not exist yet;
    returns its key id."""
    key = secrets.token_hex(32).encode()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise InputError(
            "the file exists; a key is never overwritten (checkpoints signed with it could no "
            "longer be verified)",
            path=str(path),
        ) from None
    except OSError as exc:
        raise InputError(f"cannot create the key file: {exc.strerror}", path=str(path)) from None
    with os.fdopen(fd, "wb") as f:
        f.write(key + b"\n")
    return key_id(key)


@dataclass(frozen=True)
class Checkpoint:
    """The head of the chain at one moment, signed."""

    position: int
    hash: str
    created_at: str
    key_id: str
    mac: str

    @classmethod
    def sign(cls, position: int, head_hash: str, key: bytes) -> Checkpoint:
        created_at = datetime.now(UTC).isoformat(timespec="seconds")
        kid = key_id(key)
        return cls(position, head_hash, created_at, kid, _mac(key, position, head_hash, created_at, kid))

    def line(self) -> str:
        return json.dumps({"v": FORMAT, **self.__dict__}, separators=(",", ":"))


def _mac(key: bytes, position: int, head_hash: str, created_at: str, kid: str) -> str:
    signed = {"v": FORMAT, "position": position, "hash": head_hash, "created_at": created_at, "key_id": kid}
    return hmac.new(key, canonical_json(signed).encode(), hashlib.sha256).hexdigest()


def read_checkpoints(path: Path, key: bytes) -> list[Checkpoint]:
    """Every checkpoint in the file, each signature checked. A malformed line is an input error;
    a line signed with another key or whose signature does not match fails verification."""
    try:
        handle = path.open(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(
            "the checkpoint file does not exist",
            path=str(path),
            hint="'auditor store checkpoint' writes the first one; if it existed, it was removed",
        ) from None
    except OSError as exc:
        raise InputError(f"cannot read the checkpoint file: {exc.strerror}", path=str(path)) from None
    mine = key_id(key)
    out = []
    with handle:
        for n, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            cp = _parse(text, path, n)
            where = f"{path}, line {n}"
            if cp.key_id != mine:
                raise VerificationFailed(
                    f"{where}: the checkpoint was signed with another key (key id {cp.key_id}; "
                    f"the key given has id {mine})",
                    hint="give the key that signed it",
                )
            if not hmac.compare_digest(cp.mac, _mac(key, cp.position, cp.hash, cp.created_at, cp.key_id)):
                raise VerificationFailed(
                    f"{where}: the checkpoint's signature does not match: altered or forged"
                )
            out.append(cp)
    return out


def _parse(text: str, path: Path, line: int) -> Checkpoint:
    try:
        record = json.loads(text)
    except ValueError as exc:
        raise InputError(f"not a JSON checkpoint: {exc}", path=str(path), line=line) from None
    if not isinstance(record, dict):
        raise InputError("a checkpoint is a JSON object", path=str(path), line=line)
    if record.get("v") != FORMAT:
        raise InputError(
            f"unknown checkpoint format {record.get('v')!r}", path=str(path), line=line, field="v"
        )
    position = record.get("position")
    if type(position) is not int or position < 1:
        raise InputError("must be a positive integer", path=str(path), line=line, field="position")
    for name in ("hash", "mac"):
        value = record.get(name)
        if not isinstance(value, str) or len(value) != 64 or not set(value) <= _HEX64:
            raise InputError("must be 64 lowercase hex digits", path=str(path), line=line, field=name)
    for name in ("created_at", "key_id"):
        if not isinstance(record.get(name), str):
            raise InputError("must be a string", path=str(path), line=line, field=name)
    return Checkpoint(position, record["hash"], record["created_at"], record["key_id"], record["mac"])


def append_checkpoint(path: Path, checkpoint: Checkpoint) -> None:
    """Append one line in one write, flushed to disk: concurrent writers never interleave."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as exc:
        raise InputError(f"cannot open the checkpoint file: {exc.strerror}", path=str(path)) from None
    try:
        os.write(fd, (checkpoint.line() + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def take_checkpoint(store: EventStore, path: Path, key: bytes) -> Checkpoint | None:
    """Check that the events since the latest checkpoint chain onto it (the whole chain, the first
    time), then append a checkpoint of the head. None when there is nothing new to anchor."""
    earlier = read_checkpoints(path, key) if path.exists() else []
    latest = max(earlier, key=lambda c: c.position, default=None)
    report = verify_chain(store, earlier, since=latest)
    if not report.ok:
        at = f" (position {report.broken_position})" if report.broken_position else ""
        raise VerificationFailed(
            f"refusing to checkpoint {store.safe_url}: {report.reason}{at}",
            hint="anchoring it would vouch for the damage: run 'auditor store verify' and see docs/store.md",
        )
    if report.head_position == 0 or (latest is not None and report.head_position == latest.position):
        return None
    checkpoint = Checkpoint.sign(report.head_position, report.head_hash, key)
    append_checkpoint(path, checkpoint)
    return checkpoint


@dataclass(frozen=True)
class CheckpointSettings:
    """Where and how often a long-running process anchors the store."""

    path: Path
    key: bytes = field(repr=False)
    every_s: float = DEFAULT_EVERY_S

    @classmethod
    def from_env(cls) -> CheckpointSettings | None:
        """AUDITOR_CHECKPOINT_FILE turns periodic checkpoints on; the key comes from
        AUDITOR_CHECKPOINT_KEY_FILE and the period (seconds) from AUDITOR_CHECKPOINT_EVERY."""
        path = os.environ.get(FILE_ENV)
        if not path:
            return None
        raw = os.environ.get(EVERY_ENV, str(DEFAULT_EVERY_S))
        try:
            every = float(raw)
        except ValueError:
            every = -1.0
        if not 0 < every < float("inf"):
            raise InputError(f"'{raw}' is not a positive number of seconds", field=EVERY_ENV)
        return cls(Path(path).expanduser(), load_key(None), every)

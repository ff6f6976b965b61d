"""The append-only event store: every view (trace, graph, report, repair) is rebuilt from it."""

from auditor.core.store.eventstore import DEFAULT_STORE_URL, EventStore, resolve_url
from auditor.core.store.projections import Projection, catch_up, rebuild
from auditor.core.store.transaction import EncodedEvent, Reader, Transaction
from auditor.core.store.verify import ChainReport, verify_chain


def open_store(
    url: str | None = None, *, require_guards: bool = True, allow_behind: bool = False
) -> EventStore:
    """Open (and create if needed) the store at ``url``, AUDITOR_STORE, or ./auditor.db; a store
    whose append-only guards were dropped is refused unless ``require_guards`` is False, one whose
    schema is behind this code's unless ``allow_behind`` is True (see EventStore)."""
    return EventStore(url, require_guards=require_guards, allow_behind=allow_behind)


__all__ = [
    "DEFAULT_STORE_URL",
    "ChainReport",
    "EncodedEvent",
    "EventStore",
    "Projection",
    "Reader",
    "Transaction",
    "catch_up",
    "open_store",
    "rebuild",
    "resolve_url",
    "verify_chain",
]

"""SQLite: the guard on inserts (issue 22). REPLACE and INSERT OR REPLACE delete a conflicting
event without firing DELETE triggers, so an insert must take the next position and collide with
no stored event on any unique key. PostgreSQL needs nothing: its upserts and MERGE already fire
the row trigger of 0001.

A release before migrations created this trigger at the first open from issue 22 on, hence IF
NOT EXISTS. The upgrade walks the hash chain before it runs (auditor store upgrade), as
``auditor store guard`` does before it restores a guard.

Revision ID: 0002
Revises: 0001
"""

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_REFUSED = "events are append-only: an insert must take the next position and replace no event"


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    op.execute(
        f"""CREATE TRIGGER IF NOT EXISTS events_refuse_overwrite BEFORE INSERT ON events
        WHEN NEW.global_position IS NOT (SELECT COALESCE(MAX(global_position), 0) + 1 FROM events)
          OR EXISTS (SELECT 1 FROM events
                     WHERE stream_id = NEW.stream_id AND stream_version = NEW.stream_version)
          OR EXISTS (SELECT 1 FROM events WHERE idempotency_key = NEW.idempotency_key)
        BEGIN SELECT RAISE(ABORT, '{_REFUSED}'); END"""
    )

"""Alembic's entry point for this script directory; auditor.store.migrate configures it."""

from alembic import context

from auditor.store.migrate import run_environment

run_environment(context)

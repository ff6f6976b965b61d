"""Alembic's entry point for this script directory; auditor.core.store.migrate configures it."""

from alembic import context

from auditor.core.store.migrate import run_environment

run_environment(context)

"""Folders of installed data packages, found without importing them (their imports pull in heavy or
missing dependencies; only their data files are read)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from auditor.core.errors import InputError


def package_dir(module: str, *, what: str, field: str, hint: str) -> Path:
    """The folder of the installed package ``module``; a clear error naming ``what`` when absent."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise InputError(f"{what} is not installed", field=field, hint=hint)
    return Path(next(iter(spec.submodule_search_locations)))

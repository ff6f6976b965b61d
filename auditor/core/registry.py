"""Named entries that load on first use: the detectors, the attribution strategies, the worlds and
the CLI's command modules are each one table of this kind.

An entry is written ``module:attribute``, as a package's entry points are, so naming what exists
imports nothing: ``auditor --help`` stays light, and one broken detector fails alone when it is
loaded. The table's order is the order entries are listed and run in (a review's finding ids depend
on the detectors' order). A decorator on each class, as inspect_ai registers its solvers, would
register a name only once its module had been imported, which is what the table puts off.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import Generic, TypeVar

from auditor.core.errors import InputError

T = TypeVar("T")


class Registry(Mapping[str, str], Generic[T]):
    """Name → ``module:attribute`` in registration order; ``load`` imports one module and returns
    its attribute (of type ``T``: a class to instantiate, or a function to call)."""

    def __init__(self, kind: str, entries: Mapping[str, str], *, field: str | None = None) -> None:
        """``kind`` names an entry in the unknown-name error ("unknown detector 'x'"); ``field`` is
        the option or argument that error points at, where there is one."""
        for name, entry in entries.items():
            module, _, attribute = entry.partition(":")
            if not module or not attribute or ":" in attribute:
                raise ValueError(f"{kind} '{name}': entry {entry!r} is not written module:attribute")
        self.kind, self.field = kind, field
        self._entries = dict(entries)

    def __getitem__(self, name: str) -> str:
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def load(self, name: str) -> T:
        """What ``name`` is registered as, its module imported now; an unknown name is an input
        error that lists the valid ones."""
        if name not in self._entries:
            raise InputError(
                f"unknown {self.kind} '{name}'", field=self.field, hint=f"valid: {', '.join(self._entries)}"
            )
        module, _, attribute = self._entries[name].partition(":")
        loaded: T = getattr(importlib.import_module(module), attribute)
        return loaded

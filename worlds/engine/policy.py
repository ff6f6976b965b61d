"""Agent policies: who decides what each role does. ``scripted`` runs offline and reproducibly.

A scripted policy is a simulation with explicit propensities (documented per world in
``PARAMS``), never a measurement of a model. Its agents see only what a real agent would see:
their role card, their own messages and tool results, and tool interfaces, never gate settings.
Text comes from phrasebooks with seeded variation; one held-out template family exists so that an
audit can be checked on wordings its detectors were not developed on.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from auditor.core.errors import InputError
from worlds.engine.runtime import Behaviour, ToolSpec

FAMILIES = ("main", "heldout")


def rng_for(*parts: object) -> random.Random:
    """A random stream keyed by its parts (same parts → same draws, on every platform)."""
    return random.Random("|".join(str(p) for p in parts))


class Phrasebook:
    """Templates per utterance kind, in two families with the same keys."""

    def __init__(self, main: dict[str, list[str]], heldout: dict[str, list[str]]) -> None:
        missing = sorted(set(main) ^ set(heldout))
        if missing:
            raise ValueError(f"phrasebook families differ in keys: {missing}")
        self.families = {"main": main, "heldout": heldout}

    def say(self, family: str, key: str, rng: random.Random, **fields: Any) -> str:
        return rng.choice(self.families[family][key]).format(**fields)

    def all_templates(self) -> list[str]:
        return [t for fam in self.families.values() for ts in fam.values() for t in ts]


@dataclass
class TurnContext:
    """Everything a behaviour may use for one agent turn."""

    role: str
    card: str
    task: dict[str, Any]
    rng: random.Random
    params: dict[str, float]
    family: str
    phrasebook: Phrasebook
    tools: list[ToolSpec]
    seen: Callable[[], str] = field(default=lambda: "")

    def say(self, key: str, **fields: Any) -> str:
        return self.phrasebook.say(self.family, key, self.rng, **fields)

    def chance(self, param: str) -> bool:
        return self.rng.random() < self.params[param]

    def tool(self, name: str) -> ToolSpec | None:
        return next((t for t in self.tools if t.name == name), None)


class Policy(Protocol):
    name: str
    family: str

    def digest(self) -> str: ...

    def params_for(self, condition: str) -> dict[str, float]: ...

    def behaviour(self, ctx: TurnContext) -> Behaviour: ...


RoleScript = Callable[[TurnContext], Behaviour]


class ScriptedPolicy:
    """Seeded scripted agents: one script per role, propensities as a per-condition parameter table.

    The digest covers the whole table, the overrides and the template family, so an audit cohort
    and its retest cohort can prove they ran the same policy.
    """

    name = "scripted"

    def __init__(
        self,
        scripts: dict[str, RoleScript],
        table: dict[str, dict[str, float]],
        overrides: dict[str, float] | None = None,
        family: str = "main",
    ) -> None:
        if family not in FAMILIES:
            raise InputError(f"unknown template family {family!r}; choose one of {', '.join(FAMILIES)}")
        self.scripts, self.table, self.family = scripts, table, family
        self.overrides = dict(overrides or {})
        unknown = sorted(set(self.overrides) - set(table["base"]))
        if unknown:
            raise InputError(
                f"unknown scripted parameters: {', '.join(unknown)}",
                hint=f"known: {', '.join(sorted(table['base']))}",
            )

    def params_for(self, condition: str) -> dict[str, float]:
        params = dict(self.table["base"])
        params.update(self.table.get(condition, {}))
        params.update(self.overrides)
        return params

    def digest(self) -> str:
        blob = json.dumps(
            {"table": self.table, "overrides": self.overrides, "family": self.family}, sort_keys=True
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def behaviour(self, ctx: TurnContext) -> Behaviour:
        return self.scripts[ctx.role](ctx)


class FixedPolicy:
    """Hand-written role scripts for reference episodes (tests, worked examples): no propensities drawn."""

    name = "fixed"

    def __init__(
        self, scripts: dict[str, RoleScript], params: dict[str, float], family: str = "main"
    ) -> None:
        self.scripts, self.params, self.family = scripts, dict(params), family

    def digest(self) -> str:
        names = {role: getattr(fn, "__qualname__", repr(fn)) for role, fn in sorted(self.scripts.items())}
        return hashlib.sha256(json.dumps([names, self.params], sort_keys=True).encode()).hexdigest()[:16]

    def params_for(self, condition: str) -> dict[str, float]:
        return dict(self.params)

    def behaviour(self, ctx: TurnContext) -> Behaviour:
        return self.scripts[ctx.role](ctx)

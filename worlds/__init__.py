"""The five micro-worlds (A1, B1, C1, D1, F1): deterministic engines with known ground truth.

Front door: ``get_world(name)``, ``list_worlds()``, ``run_cohort``, ``summarise``, the store and
export helpers. Worlds load lazily, so importing this package stays cheap.
"""

from __future__ import annotations

from auditor.core.registry import Registry
from worlds.engine.cohort import Cohort, EndpointRow, mean_utility, run_cohort, summarise
from worlds.engine.episode import EpisodeResult, EpisodeSpec, Identity, Judgment, Outcome
from worlds.engine.persist import export_bundle, load_cohort, record_cohort, record_episode
from worlds.engine.workflow import Workflow
from worlds.engine.world import World

_WORLDS: Registry[type[World]] = Registry(
    "world",
    {
        "A1": "worlds.a1:A1World",
        "B1": "worlds.b1:B1World",
        "C1": "worlds.c1:C1World",
        "D1": "worlds.d1:D1World",
        "F1": "worlds.f1:F1World",
    },
)


def list_worlds() -> list[str]:
    return list(_WORLDS)


def get_world(name: str) -> World:
    """A fresh engine of the named world (the name in any case: "a1" is A1)."""
    return _WORLDS.load(name.upper())()


def quick_cohort(name: str, episodes: int = 100, seed: int = 0, family: str = "main") -> Cohort:
    """Run a scripted cohort over a world's canonical conditions (episodes split across them)."""
    world = get_world(name)
    conds = world.canonical_conditions
    per = max(1, episodes // len(conds))
    return run_cohort(world, world.scripted(family), conds, per, seed)


__all__ = [
    "Cohort",
    "EndpointRow",
    "EpisodeResult",
    "EpisodeSpec",
    "Identity",
    "Judgment",
    "Outcome",
    "Workflow",
    "World",
    "export_bundle",
    "get_world",
    "list_worlds",
    "load_cohort",
    "mean_utility",
    "quick_cohort",
    "record_cohort",
    "record_episode",
    "run_cohort",
    "summarise",
]

"""A world's card (``world.yaml`` in its package): what the world is and what it measures.

Name, title, the task text its traces carry, the simulated start, the conditions (levers) and
which of them are canonical (all, when the card does not say), the endpoints and the primary one,
and whether the seed gives the world a fixed LLM judge. Data, not behaviour: the package's Python
plays the world. A malformed card is refused with its file and field.
"""

from __future__ import annotations

from datetime import datetime
from importlib import resources
from typing import Any

import yaml

from auditor.core.errors import InputError

CARD = "world.yaml"
_TEXT = ("name", "title", "task_text", "primary")
_MAPPINGS = ("conditions", "endpoints")


def read_card(package: str) -> dict[str, Any]:
    """The card's fields, checked, with ``canonical_conditions`` and ``llm_judged`` filled in."""
    origin = f"{package}/{CARD}"
    data = yaml.safe_load(resources.files(package).joinpath(CARD).read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise InputError("a world card must be a YAML mapping", path=origin)
    unknown = sorted(set(data) - {*_TEXT, *_MAPPINGS, "start", "canonical_conditions", "llm_judged"})
    if unknown:
        raise InputError(f"unknown field {unknown[0]!r}", path=origin, field=unknown[0])
    for key in _TEXT:
        if not isinstance(data.get(key), str) or not data[key]:
            raise InputError("must be a non-empty string", path=origin, field=key)
    for key in _MAPPINGS:
        value = data.get(key)
        if (
            not isinstance(value, dict)
            or not value
            or not all(isinstance(v, str) for v in [*value, *value.values()])
        ):
            raise InputError("must map names to descriptions", path=origin, field=key)
    if not isinstance(data.get("start"), datetime):
        raise InputError("must be a date and time (YYYY-MM-DD HH:MM:SS)", path=origin, field="start")
    canonical = data.setdefault("canonical_conditions", list(data["conditions"]))
    if not isinstance(canonical, list) or not canonical or not set(canonical) <= set(data["conditions"]):
        raise InputError("must list some of the card's conditions", path=origin, field="canonical_conditions")
    if data["primary"] not in data["endpoints"]:
        raise InputError("must be one of the card's endpoints", path=origin, field="primary")
    if not isinstance(data.setdefault("llm_judged", False), bool):
        raise InputError("must be true or false", path=origin, field="llm_judged")
    return data

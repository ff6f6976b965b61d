"""A world's workflow configuration: the YAML a repair may patch, within its declared surface.

The file declares ``repair_surface`` (dotted paths a repair may change) and ``protected`` (the
parts no repair may touch: world source, judge, ground truth, task utility). Gates read their
settings from here at call time, so a patched configuration changes what the tools enforce.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from auditor.core.errors import InputError

_REQUIRED = ("world", "version", "repair_surface", "protected")


def _key_not_text(data: Any) -> Any:
    """The first mapping key anywhere in ``data`` that is not text (YAML reads ``1:`` as a number),
    or None."""
    if isinstance(data, dict):
        for key, value in data.items():
            if not isinstance(key, str):
                return key
            if (bad := _key_not_text(value)) is not None:
                return bad
    elif isinstance(data, list):
        for item in data:
            if (bad := _key_not_text(item)) is not None:
                return bad
    return None


def _walk(data: Any, prefix: str = "") -> dict[str, Any]:
    """Flatten nested mappings to dotted leaf paths."""
    if not isinstance(data, dict) or not data:
        return {prefix: data}
    out: dict[str, Any] = {}
    for key, value in data.items():
        out.update(_walk(value, f"{prefix}.{key}" if prefix else str(key)))
    return out


@dataclass(frozen=True)
class Workflow:
    """An immutable workflow configuration; patched copies are new objects."""

    data: dict[str, Any]
    origin: str

    @staticmethod
    def from_yaml(text: str, origin: str) -> Workflow:
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = mark.line + 1 if mark is not None else None
            raise InputError(
                f"not valid YAML: {getattr(exc, 'problem', exc)}", path=origin, line=line
            ) from exc
        if not isinstance(data, dict):
            raise InputError("a workflow configuration must be a YAML mapping", path=origin)
        wf = Workflow(data=data, origin=origin)
        wf.validate()
        return wf

    @staticmethod
    def load(path: str | Path) -> Workflow:
        p = Path(path)
        if not p.is_file():
            raise InputError("workflow configuration not found", path=str(p))
        return Workflow.from_yaml(p.read_text(encoding="utf-8"), str(p))

    @staticmethod
    def packaged(world_package: str) -> Workflow:
        """The default configuration shipped beside a world's source."""
        text = resources.files(world_package).joinpath("workflow.yaml").read_text(encoding="utf-8")
        return Workflow.from_yaml(text, f"{world_package}/workflow.yaml")

    def validate(self) -> None:
        for key in _REQUIRED:
            if key not in self.data:
                raise InputError("missing required key", path=self.origin, field=key)
        if (key := _key_not_text(self.data)) is not None:
            raise InputError(f"a key of the configuration is {key!r}, not text", path=self.origin)
        for key in ("repair_surface", "protected"):
            paths = self.data[key]
            if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
                raise InputError(
                    "must be a list of dotted paths (text), e.g. ['gates.action_entry.cumulative_check']",
                    path=self.origin,
                    field=key,
                )
        for path in self.repair_surface:
            if not self.has(path):
                raise InputError(
                    "repair surface names a path the configuration lacks", path=self.origin, field=path
                )
            top = path.split(".")[0]
            if top in self.protected:
                raise InputError("repair surface overlaps a protected part", path=self.origin, field=path)

    @property
    def world(self) -> str:
        return str(self.data["world"])

    @property
    def repair_surface(self) -> list[str]:
        return list(self.data["repair_surface"])

    @property
    def protected(self) -> list[str]:
        return list(self.data["protected"])

    def has(self, path: str) -> bool:
        node: Any = self.data
        for part in path.split("."):
            if not isinstance(node, dict) or part not in node:
                return False
            node = node[part]
        return True

    def get(self, path: str, default: Any = None) -> Any:
        node: Any = self.data
        for part in path.split("."):
            if not isinstance(node, dict) or part not in node:
                return default
            node = node[part]
        return copy.deepcopy(node)

    def with_values(self, changes: dict[str, Any]) -> Workflow:
        """A copy with dotted paths set; refuses any path outside the repair surface."""
        outside = [p for p in changes if not self.in_surface(p)]
        if outside:
            raise InputError(
                f"paths outside the repair surface: {', '.join(sorted(outside))}", path=self.origin
            )
        data = copy.deepcopy(self.data)
        for path, value in changes.items():
            node = data
            *parents, leaf = path.split(".")
            for part in parents:
                node = node.setdefault(part, {})
            node[leaf] = value
        return Workflow(data=data, origin=self.origin)

    def in_surface(self, path: str) -> bool:
        return any(path == s or path.startswith(s + ".") for s in self.repair_surface)

    def changed_paths(self, other: Workflow) -> list[str]:
        """Leaf paths whose values differ between two configurations."""
        mine, theirs = _walk(self.data), _walk(other.data)
        return sorted(p for p in set(mine) | set(theirs) if mine.get(p, _MISSING) != theirs.get(p, _MISSING))

    def conform_to(self, template: Workflow) -> None:
        """Refuse a configuration whose values are not of the kinds the world's own configuration
        (``template``) gives them: the world's tools read them at call time, and a cost written as
        text or a gate's settings replaced by a number failed deep inside an episode, as a
        traceback. A path of the template that is here holds a value of its kind (a number for a
        number, a mapping for a mapping; list items like the template's, text where its list is
        empty, as F1's reviewer fields), numbers finite and within ±1e9. A switch (a boolean) left
        out takes the world's own value (``with_switches_of``; a variant of the world may leave one
        out); any other path left out is refused, as the quantities, lists and settings the tools
        read are. Paths the template lacks are free, and so is a value it leaves empty."""
        problem = _mismatch(template.data, self.data, "")
        if problem is not None:
            raise InputError(
                problem[1],
                path=self.origin,
                field=problem[0] or None,
                hint=f"compare with the world's own configuration ({template.origin})",
            )

    def with_switches_of(self, template: Workflow) -> Workflow:
        """A copy in which every switch (a boolean) that ``template`` holds and this configuration
        leaves out takes the template's value: what "a switch left out is the world's default"
        (``conform_to``) means to the tools that read it."""
        data = copy.deepcopy(self.data)
        _fill_switches(template.data, data)
        return Workflow(data=data, origin=self.origin)

    def scope_violations(self, patched: Workflow) -> list[str]:
        return [p for p in self.changed_paths(patched) if not self.in_surface(p)]

    def digest(self) -> str:
        blob = json.dumps(self.data, sort_keys=True, ensure_ascii=False).encode()
        return hashlib.sha256(blob).hexdigest()

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.data, sort_keys=False, allow_unicode=True)


_MISSING = object()
_NUMBER_LIMIT = 1e9


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return "null" if value is None else type(value).__name__


def _fill_switches(template: dict[str, Any], data: dict[str, Any]) -> None:
    for key, value in template.items():
        if key not in data and isinstance(value, bool):
            data[key] = value
        elif isinstance(value, dict) and isinstance(data.get(key), dict):
            _fill_switches(value, data[key])


def _mismatch(expected: Any, found: Any, path: str) -> tuple[str, str] | None:
    """(the dotted path, what is wrong there) for the first value of ``found`` not of the kind
    ``expected`` holds at that path; None when every one is."""
    if expected is None:
        return None
    if _kind(found) != _kind(expected):
        return path, f"expected {_kind(expected)} as the world's own configuration has, found {_kind(found)}"
    if _kind(found) == "a number" and (not math.isfinite(found) or abs(found) > _NUMBER_LIMIT):
        return path, f"a number out of range ({found!r}; at most ±1e9)"
    if isinstance(expected, dict):
        for key, value in expected.items():
            at = f"{path}.{key}" if path else str(key)
            if key not in found and not isinstance(value, bool):
                return at, "missing: the world's own configuration has it, and its tools read it"
            if key in found and (problem := _mismatch(value, found[key], at)) is not None:
                return problem
    if isinstance(expected, list):
        for i, item in enumerate(found):  # an empty list's items are names (text) unless shown
            like = expected[i] if i < len(expected) else expected[-1] if expected else ""
            if (problem := _mismatch(like, item, f"{path}.{i}")) is not None:
                return problem
    return None

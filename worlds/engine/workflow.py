"""A world's workflow configuration: the YAML a repair may patch, within its declared surface.

The file declares ``repair_surface`` (dotted paths a repair may change) and ``protected`` (the
parts no repair may touch: world source, judge, ground truth, task utility). Gates read their
settings from here at call time, so a patched configuration changes what the tools enforce.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from auditor.core.errors import InputError

_REQUIRED = ("world", "version", "repair_surface", "protected")


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

    def scope_violations(self, patched: Workflow) -> list[str]:
        return [p for p in self.changed_paths(patched) if not self.in_surface(p)]

    def digest(self) -> str:
        blob = json.dumps(self.data, sort_keys=True, ensure_ascii=False).encode()
        return hashlib.sha256(blob).hexdigest()

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.data, sort_keys=False, allow_unicode=True)


_MISSING = object()

"""Declared invariants (`--policy policy.yaml`): the organisation's rules that traces rarely state.

Placeholder contract for the detectors: the full YAML language lands with the cumulative-action
and disclosure detectors.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Policy:
    name: str
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def digest(self) -> str:
        import json

        return "sha256:" + hashlib.sha256(json.dumps(self.raw, sort_keys=True).encode()).hexdigest()[:16]

    def approvers(self) -> list[str]:
        return [str(a) for r in self.raw.get("required_approvals", []) for a in [r.get("approver")] if a]

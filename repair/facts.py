"""Facts read from a workflow configuration that both the Repair Agent and the Reviewer rely on."""

from __future__ import annotations

from worlds import Workflow


def declared_cap(wf: Workflow) -> float | None:
    """The one numeric cap the configuration's declared policy states (``policy.*cap*``), if any."""
    policy = wf.get("policy")
    if not isinstance(policy, dict):
        return None
    caps = [
        float(v)
        for k, v in policy.items()
        if "cap" in str(k) and isinstance(v, int | float) and not isinstance(v, bool)
    ]
    return caps[0] if len(caps) == 1 else None

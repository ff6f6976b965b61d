"""Damage for JSON documents: one to three values anywhere in the tree replaced by a value of
another type, deleted, cut short, doubled or wrapped (the mutation fuzz of real files)."""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from typing import Any

# values of every JSON type, and texts that the parsers look for
REPLACEMENTS: list[Any] = [
    None, True, 0, -1, 2**63, 1.5, "", "x", [], {}, [None], {"": None}, "a" * 3000,
    "<returncode>1</returncode>", "```bash\nls\n```", "diff --git a/x b/x\n", "cat <<'EOF' > a.py\n",
]  # fmt: skip


def places(value: Any, at: tuple = ()) -> list[tuple]:
    """Every path into a JSON value (a long list's first 20 items)."""
    out = [at]
    if isinstance(value, dict):
        for k, v in value.items():
            out += places(v, (*at, k))
    elif isinstance(value, list):
        for i, v in enumerate(value[:20]):
            out += places(v, (*at, i))
    return out


def damaged(doc: Any, rnd: random.Random, where: Callable[[tuple], bool] = bool) -> Any:
    """A damaged copy of ``doc``; ``where`` picks the paths that may be damaged (any but the root)."""
    doc = copy.deepcopy(doc)
    for _ in range(rnd.randint(1, 3)):
        inner = [p for p in places(doc) if p and where(p)]
        if not inner:  # the document is an empty object or list by now
            break
        at = rnd.choice(inner)
        parent = doc
        for key in at[:-1]:
            parent = parent[key]
        key, now, how = at[-1], parent[at[-1]], rnd.random()
        if how < 0.5:
            parent[key] = copy.deepcopy(rnd.choice(REPLACEMENTS))
        elif how < 0.65 and isinstance(parent, dict):
            del parent[key]
        elif how < 0.8 and isinstance(now, str):
            parent[key] = now[: rnd.randint(0, len(now))]
        elif how < 0.9 and isinstance(parent, list):
            parent.insert(key, copy.deepcopy(now))
        else:
            parent[key] = [now] if rnd.random() < 0.5 else {"content": now}
    return doc

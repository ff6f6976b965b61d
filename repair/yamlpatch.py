"""Apply leaf changes to workflow YAML text, keeping its comments and layout where it can.

A reviewer reading the PR should see the changed lines, not a re-serialised file. Each change
replaces one block-style ``key: value`` line in place; the result is parsed and compared with the
expected configuration, and any mismatch (a new key, a block list) falls back to a full dump, so
the written text always means exactly the patched configuration.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

_KEY = re.compile(r"^(?P<indent>\s*)(?P<key>[A-Za-z0-9_\-]+):(?P<rest>.*?)(?P<comment>\s+#.*)?$")


def _content(line: str) -> bool:
    s = line.strip()
    return bool(s) and not s.startswith("#")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _find(lines: list[str], parts: list[str]) -> int | None:
    """Index of the line holding the dotted path's leaf key, walking block mappings by indentation."""
    start, end, parent = 0, len(lines), -1
    found = None
    for part in parts:
        found = None
        for i in range(start, end):
            line = lines[i].rstrip("\n")
            if not _content(line) or _indent(line) <= parent:
                continue
            m = _KEY.match(line)
            if m and m.group("key") == part:
                found = i
                break
        if found is None:
            return None
        parent = _indent(lines[found])
        start = found + 1
        end = next(
            (j for j in range(start, len(lines)) if _content(lines[j]) and _indent(lines[j]) <= parent),
            len(lines),
        )
    return found


def _flow(value: Any) -> str:
    return yaml.safe_dump([value], default_flow_style=True, allow_unicode=True, width=10_000).strip()[1:-1]


def patch_yaml_text(text: str, changes: dict[str, Any], expected: dict[str, Any]) -> str:
    """The text with each dotted leaf set; exactly ``expected`` when parsed (else a full dump)."""
    lines = text.splitlines(keepends=True)
    for path, value in changes.items():
        i = _find(lines, path.split("."))
        m = _KEY.match(lines[i].rstrip("\n")) if i is not None else None
        if i is None or m is None or not m.group("rest").strip():
            return yaml.safe_dump(expected, sort_keys=False, allow_unicode=True)
        lines[i] = f"{m.group('indent')}{m.group('key')}: {_flow(value)}{m.group('comment') or ''}\n"
    patched = "".join(lines)
    if yaml.safe_load(patched) != expected:
        return yaml.safe_dump(expected, sort_keys=False, allow_unicode=True)
    return patched

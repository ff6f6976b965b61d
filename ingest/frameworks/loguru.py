"""The loguru line format that MetaGPT and OpenManus both log in.

``2025-03-31 20:33:34.369 | INFO     | app.agent.toolcall:think:82 - message``. Text before the
timestamp on the same line (a console prompt such as ``Enter your prompt: ``) is allowed.
"""

from __future__ import annotations

import re

LOGURU = re.compile(
    r"^(?P<prefix>.*?)(?P<date>\d{4}-\d{2}-\d{2}) (?P<time>\d{2}:\d{2}:\d{2}(?:\.\d+)?) \| "
    r"(?P<level>[A-Z]+) *\| (?P<where>[^ ]+) - (?P<msg>.*)$"
)


def loguru_time(m: re.Match[str]) -> str:
    return f"{m.group('date')}T{m.group('time')}"

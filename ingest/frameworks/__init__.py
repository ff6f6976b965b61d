"""Framework raw-log parsers (the seven MAST/MAD frameworks), by name.

Each parser reads one framework's log from a :class:`Source` (a file, or a corpus record's trace
string) and emits canonical steps; the corpus importer and the raw-file importers share them.
"""

from __future__ import annotations

from ingest.frameworks import ag2, appworld, chatdev, hyperagent, magentic, metagpt, openmanus
from ingest.frameworks.common import LogFormat, Source

FORMATS: dict[str, LogFormat] = {
    f.name: f
    for f in (
        hyperagent.FORMAT,
        ag2.FORMAT,
        metagpt.JSON_FORMAT,
        metagpt.TEXT_FORMAT,
        appworld.FORMAT,
        chatdev.FORMAT,
        magentic.FORMAT,
        openmanus.FORMAT,
    )
}

# MAD's mas_name (and, where the file swapped them, benchmark_name) → parser names to try in order.
MAS_NAMES: dict[str, tuple[str, ...]] = {
    "appworld": ("appworld",),
    "hyperagent": ("hyperagent",),
    "ag2": ("ag2",),
    "chatdev": ("chatdev",),
    "metagpt": ("metagpt", "metagpt-text"),
    "magentic": ("magentic-one",),
    "magentic-one": ("magentic-one",),
    "openmanus": ("openmanus",),
}


def sniff(head: str, candidates: tuple[str, ...] | None = None) -> tuple[LogFormat, str] | None:
    """The first format (among ``candidates``, else all) whose sniffer recognises ``head``."""
    for name in candidates or tuple(FORMATS):
        reason = FORMATS[name].sniff(head)
        if reason:
            return FORMATS[name], reason
    return None


def for_corpus_record(mas_name: str, benchmark: str, head: str) -> tuple[LogFormat, str] | None:
    """Pick the parser for a corpus record: by its framework name (also when the corpus swapped
    framework and benchmark, as MAD does for GAIA), confirmed by the log itself; else by sniffing."""
    for label in (mas_name, benchmark):
        names = MAS_NAMES.get(label.strip().lower())
        if names:
            found = sniff(head, names)
            if found:
                return found[0], f"mas_name/benchmark '{label}' and {found[1]}"
            if len(names) == 1:
                return FORMATS[names[0]], f"mas_name/benchmark '{label}'"
    return sniff(head)


__all__ = ["FORMATS", "LogFormat", "Source", "for_corpus_record", "sniff"]

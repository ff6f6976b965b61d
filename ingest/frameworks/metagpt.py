"""MetaGPT, in its two logger forms.

JSON form (``run_id, prompt, content, …``): ``content`` is a loguru log where
``<Name>(<Profile>): to do <Action>`` lines open each agent's act; ``prompt`` is the task.
The log names no recipients.

FROM/TO text form: ``[ts] FROM: <sender> TO: {<recipients>}`` / ``ACTION:`` / ``CONTENT:`` blocks
(the recipients are explicit there, e.g. ``<all>``), then ``[ts] NEW MESSAGES:`` blocks holding
one ``<Agent>: <text>`` message each, separated by a line of dashes; those name no recipient.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from auditor.core.json_text import NO_LITERAL, python_literal
from ingest.base import Facts, StepBuilder
from ingest.frameworks.common import Source, blocks
from ingest.frameworks.loguru import LOGURU, loguru_time
from ingest.textlines import string_lines
from schemas.trace import ActorKind, TraceStep

_ACT = re.compile(r"^(?P<who>\w+\(\w+\)): (?P<text>.*)$", re.S)
_TEXT_HEADER = re.compile(
    r"^(?:\[(?P<ts>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})\] (?:FROM: (?P<src>.+?) TO: (?P<dst>.+)|(?P<new>NEW MESSAGES:))"
    r"|(?P<rule>-{40,})|(?P<banner>=== .* ===))\s*$"
)
_SPEAKER = re.compile(r"^(?P<who>[A-Za-z][\w\-]*(?:\([\w\-]+\))?): ?(?P<text>.*)$", re.S)


def _recipients(text: str) -> list[str] | None:
    """``{'<all>'}`` or ``['Bob']`` as the logger prints them; None when unreadable."""
    value = python_literal(text.strip(), NO_LITERAL)
    if value is NO_LITERAL:
        return [text.strip()] if text.strip() else None
    names = (
        [str(v) for v in (sorted(value) if isinstance(value, set) else value)]
        if isinstance(value, set | list | tuple)
        else [str(value)]
    )
    return [n for n in names if n.strip()] or None


class MetaGPTJsonFormat:
    name = "metagpt"
    framework = "MetaGPT"

    def sniff(self, head: str) -> str | None:
        if head.lstrip().startswith("{") and '"run_id"' in head and '"content"' in head and "metagpt" in head:
            return "a JSON record ('run_id', 'prompt', 'content') whose content is a MetaGPT loguru log"
        return None

    def parse(self, source: Source, facts: Facts, b: StepBuilder) -> Iterator[TraceStep]:
        with source.open() as stream:
            reader = source.json(stream)
            content = ""
            for key in reader.members():
                value = reader.value()
                if key == "prompt":
                    facts.task = str(value)
                elif key == "content":
                    content = str(value)
                else:
                    facts.metadata[key] = value
            reader.end()
        for blk in blocks(string_lines(content), LOGURU.match):
            if blk.match is None:
                yield b.add(actor="MetaGPT", actor_kind=ActorKind.system, content=blk.text())
                continue
            msg, logger = blk.match.group("msg"), blk.match.group("where")
            raw = {"level": blk.match.group("level"), "logger": logger}
            act = _ACT.match(msg)
            yield b.add(
                timestamp=loguru_time(blk.match),
                actor=act.group("who") if act else logger.split(":")[0],
                actor_kind=ActorKind.agent if act else ActorKind.system,
                content=blk.text((act.group("text") if act else msg) + "\n"),
                raw=raw,
            )


class MetaGPTTextFormat:
    name = "metagpt-text"
    framework = "MetaGPT"

    def sniff(self, head: str) -> str | None:
        if re.search(r"^=== MetaGPT Agent Communication Log", head, re.M) or re.search(
            r"^\[[\d\- :]+\] FROM: .+ TO: ", head, re.M
        ):
            return "'=== MetaGPT Agent Communication Log ===' with '[ts] FROM: … TO: …' blocks"
        return None

    def parse(self, source: Source, facts: Facts, b: StepBuilder) -> Iterator[TraceStep]:
        for blk in blocks(source.lines(), _TEXT_HEADER.match):
            m = blk.match
            if m is None or m.group("rule") or m.group("banner"):
                if m is not None and m.group("banner"):
                    facts.count("log_banner")
                if blk.text():
                    yield b.add(actor="MetaGPT", actor_kind=ActorKind.system, content=blk.text())
                continue
            stamp = m.group("ts").replace(" ", "T")
            if m.group("src"):
                src = m.group("src").strip()
                if src == "Human" and facts.task is None:
                    facts.task = blk.text()
                yield b.add(
                    timestamp=stamp,
                    actor=src,
                    actor_kind=ActorKind.human if src == "Human" else ActorKind.agent,
                    recipients=_recipients(m.group("dst")),
                    content=blk.text(),
                    raw={"line": blk.line, "to": m.group("dst").strip()},
                )
                continue
            text = blk.text()
            speaker = _SPEAKER.match(text)
            yield b.add(
                timestamp=stamp,
                actor=speaker.group("who") if speaker else "MetaGPT",
                actor_kind=ActorKind.agent if speaker else ActorKind.system,
                content=speaker.group("text").strip("\r\n") if speaker else text,
                raw={"line": blk.line},
            )


JSON_FORMAT = MetaGPTJsonFormat()
TEXT_FORMAT = MetaGPTTextFormat()

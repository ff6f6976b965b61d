"""Magentic-One console logs, in both console forms.

AgentChat form: ``---------- <Speaker> ----------`` separators (speakers ``user``,
``MagenticOneOrchestrator``, ``WebSurfer`` …). Legacy form: a line of dashes then
``[timestamp], <Role>:`` where the role packs speaker and recipient: ``Orchestrator (-> WebSurfer)``
names the recipient; ``Orchestrator (thought)`` does not. Testbed lines ending in ``!#!#`` and
the docker/pip log they frame are the environment's. ``FINAL ANSWER:`` is a final output.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ingest.base import Facts, StepBuilder
from ingest.frameworks.common import Source, blocks
from schemas.trace import ActorKind, StepKind, TraceStep

_HEADER = re.compile(
    r"^(?:-{10} (?P<speaker>\S.*?) -{10}"
    r"|\[(?P<ts>\d{4}-\d{2}-\d{2}T[\d:.]+)\], (?P<role>[^:\n]+):"
    r"|(?P<harness>.* !#!#))\s*$"
)
_RULE = re.compile(r"^-{40,}\s*$")
_ROLE = re.compile(r"^(?P<agent>.+?) \((?P<qualifier>.+)\)$")


def split_role(role: str) -> tuple[str, list[str] | None, str | None]:
    """``Orchestrator (-> WebSurfer)`` → (Orchestrator, [WebSurfer], '-> WebSurfer')."""
    m = _ROLE.match(role.strip())
    if m is None:
        return role.strip(), None, None
    qualifier = m.group("qualifier").strip()
    if qualifier.startswith("->"):
        target = qualifier[2:].strip()
        return m.group("agent"), [target] if target else None, qualifier
    return m.group("agent"), None, qualifier


def kind_of(text: str) -> StepKind:
    return StepKind.final_output if text.lstrip().startswith("FINAL ANSWER:") else StepKind.message


class MagenticFormat:
    name = "magentic-one"
    framework = "Magentic-One"

    def sniff(self, head: str) -> str | None:
        if re.search(r"^-{10} (user|MagenticOneOrchestrator|\w+Surfer) -{10}\s*$", head, re.M):
            return "AgentChat console separators ('---------- <Speaker> ----------')"
        if re.search(r"^\[[\dT:.-]+\], Orchestrator \(", head, re.M):
            return "Magentic-One console headers ('[ts], Orchestrator (-> X):')"
        if re.search(r"^RUN\.SH STARTING !#!#", head, re.M):
            return "an AutoGen testbed log ('RUN.SH STARTING !#!#')"
        return None

    def parse(self, source: Source, facts: Facts, b: StepBuilder) -> Iterator[TraceStep]:
        for blk in blocks(source.lines(), _HEADER.match):
            m = blk.match
            if blk.body and _RULE.match(blk.body[-1]):
                blk.body.pop()  # the legacy form's separator belongs to the next header
            if m is None or m.group("harness"):
                text = blk.text(m.group("harness") + "\n") if m else blk.text()
                yield b.add(
                    actor="environment",
                    actor_kind=ActorKind.environment,
                    content=text,
                    raw={"line": blk.line},
                )
                continue
            text = blk.text()
            if m.group("speaker"):
                speaker = m.group("speaker")
                human = speaker == "user"
                yield b.add(
                    actor=speaker,
                    actor_kind=ActorKind.human if human else ActorKind.agent,
                    kind=kind_of(text),
                    content=text,
                    raw={"line": blk.line},
                )
                if human and facts.task is None:
                    facts.task = text
                continue
            actor, recipients, qualifier = split_role(m.group("role"))
            yield b.add(
                timestamp=m.group("ts"),
                actor=actor,
                actor_kind=ActorKind.human if actor == "human" else ActorKind.agent,
                recipients=recipients,
                kind=kind_of(text),
                content=text,
                raw={"line": blk.line, "role": m.group("role"), "qualifier": qualifier}
                if qualifier
                else {"line": blk.line},
            )


FORMAT = MagenticFormat()

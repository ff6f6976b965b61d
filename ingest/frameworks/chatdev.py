"""ChatDev: a plain log of ``[YYYY-DD-MM HH:MM:SS LEVEL] …`` records (day before month).

A turn header ``<Speaker>: **<A><-><B> on : <Phase>, turn N**`` names both roles of the chat, so
the recipient is the other role of the pair. ``<Speaker>: **[Start Chat]**`` has no named
recipient. ``System: **[…]**`` records are the framework's, and ``**[Seminar Conclusion]**``,
``**[Update Codes]**`` and the like are ChatDev's own records (actor ``ChatDev``). Noise records
(``flask app.py did not start``, ``HTTP Request:``, ``**[OpenAI_Usage_Info Receive]**``) are not
steps; their counts go to ``header.metadata.skipped_records``.

Mid-2023 ChatDev (and its AgentTech predecessor) wrote another shape: ``PhaseType: PhaseType.<X>``
opens a phase, ``AI Assistant (<Role>) sys message:`` / ``AI User (<Role>) sys message:`` give each
side of the phase's chat its system prompt (a step by ``system`` to that role), ``[N] AI User
(<Role>):`` / ``[N] AI Assistant (<Role>):`` are the roles' turns (the recipient is the other side
of the phase's pair, where the speaker holds its side), ``… terminated the chat.`` is ChatDev's
notice, ``Task prompt:`` gives the task, and ``[OpenAI_Usage_Info]`` records are noise. Some of
these logs colour their record headers with ANSI escapes (``\x1b[33m…``): the escapes are removed
from header lines before parsing, so the rest of such a header line in ``content`` is the stripped
text (``raw.ansi_stripped`` marks those records); body lines stay verbatim.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ingest.base import Facts, StepBuilder
from ingest.frameworks.common import Block, Source, blocks
from schemas.trace import ActorKind, TraceStep

_RECORD = re.compile(
    r"^\[(?P<y>\d{4})-(?P<d>\d{2})-(?P<m>\d{2}) (?P<t>\d{2}:\d{2}:\d{2}) (?P<level>[A-Z]+)\] (?P<msg>.*)$"
)
_TURN = re.compile(
    r"^(?P<who>[^*:]+): \*\*(?P<a>.+?)<->(?P<b>.+?) on : (?P<phase>[^,]+), turn (?P<turn>\d+)\*\*(?P<rest>.*)$"
)
_TAGGED = re.compile(r"^(?:(?P<who>[^*:]+): )?\*\*\[(?P<tag>[^\]]+)\]\*\*:?(?P<rest>.*)$")
_TASK = re.compile(r"^\*\*task_prompt\*\*: (?P<task>.+)$", re.M)
_PROJECT = re.compile(r"^\*\*project_name\*\*: (?P<name>.+)$", re.M)
_NOISE = {
    "flask app.py did not start for online log": "flask_notice",
}
_NOISE_TAGS = {"OpenAI_Usage_Info Receive": "openai_usage_info"}
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
_ROLE = re.compile(
    r"^(?:\[(?P<turn>\d+)\] )?AI (?P<side>User|Assistant) \((?P<role>[^)]+)\)"
    r"(?P<what>:| sys message:| terminated the chat\.)(?P<rest>.*)$"
)
_PHASE = re.compile(r"^PhaseType: PhaseType\.(?P<phase>\w+)")
_OLD_START = re.compile(
    r"^\[[\d: -]+ INFO\] (?:(?:ChatDev|AgentTech) Starts \(\d+\)"
    r"|(?:\[\d+\] )?AI (?:User|Assistant) \([^)]+\)(?: sys message)?:)",
    re.M,
)


class ChatDevFormat:
    name = "chatdev"
    framework = "ChatDev"

    def sniff(self, head: str) -> str | None:
        if re.search(r"^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} INFO\] \*\*\[Preprocessing\]\*\*", head, re.M):
            return "'[YYYY-DD-MM hh:mm:ss INFO] **[Preprocessing]**' ChatDev log records"
        if re.search(r"^\*\*ChatDev Starts\*\*", head, re.M) or re.search(
            r"^\[[\d: -]+ INFO\] .*<->.* on : \w+, turn \d+", head, re.M
        ):
            return "ChatDev log records ('**ChatDev Starts**' or '<A><->B on : Phase, turn N' headers)"
        if _OLD_START.search(_ANSI.sub("", head)):
            return "mid-2023 ChatDev log records ('ChatDev Starts (…)' or 'AI User (<Role>):' headers)"
        return None

    def parse(self, source: Source, facts: Facts, b: StepBuilder) -> Iterator[TraceStep]:
        coloured: set[int] = set()  # header lines that held ANSI escapes
        seen = {"line": 0}

        def header(line: str) -> re.Match[str] | None:
            seen["line"] += 1
            clean = _ANSI.sub("", line)
            if clean != line:
                coloured.add(seen["line"])
            return _RECORD.match(clean)

        chat = _Chat()
        for blk in blocks(source.lines(), header):
            m = blk.match
            if m is None:
                yield b.add(
                    actor="ChatDev", actor_kind=ActorKind.system, content=blk.text(), raw={"line": blk.line}
                )
                continue
            msg = m.group("msg")
            day, month = m.group("d"), m.group("m")
            if int(month) > 12 >= int(day):  # some ChatDev builds write month first after all
                day, month = month, day
            stamp = f"{m.group('y')}-{month}-{day}T{m.group('t')}"
            raw = {"line": blk.line, "level": m.group("level")}
            if blk.line in coloured:
                raw["ansi_stripped"] = True
            if msg.strip() in _NOISE or msg.startswith("HTTP Request:"):
                facts.count(_NOISE.get(msg.strip(), "http_request"))
                continue
            if msg.strip() == "[OpenAI_Usage_Info]":
                facts.count("openai_usage_info")
                continue
            if mid_2023 := chat.step(msg, blk, stamp, raw, facts, b):
                yield mid_2023
            elif turn := _TURN.match(msg):
                who, a, peer = turn.group("who"), turn.group("a"), turn.group("b")
                recipient = peer if who == a else a if who == peer else None
                yield b.add(
                    timestamp=stamp,
                    actor=who,
                    recipients=[recipient] if recipient else None,
                    content=blk.text(turn.group("rest")),
                    raw={
                        **raw,
                        "phase": turn.group("phase").strip(),
                        "turn": int(turn.group("turn")),
                        "chat": [a, peer],
                    },
                )
            elif tagged := _TAGGED.match(msg):
                tag = tagged.group("tag")
                if tag in _NOISE_TAGS:
                    facts.count(_NOISE_TAGS[tag])
                    continue
                text = blk.text(tagged.group("rest"))
                if tag == "Preprocessing":
                    if task := _TASK.search(text):
                        facts.task = task.group("task").strip()
                    if project := _PROJECT.search(text):
                        facts.metadata["project_name"] = project.group("name").strip()
                who = tagged.group("who")
                system = who in (None, "System")
                yield b.add(
                    timestamp=stamp,
                    actor=who or "ChatDev",
                    actor_kind=ActorKind.system if system else ActorKind.agent,
                    content=text,
                    raw={**raw, "record": tag},
                )
            else:
                yield b.add(
                    timestamp=stamp,
                    actor="ChatDev",
                    actor_kind=ActorKind.system,
                    content=blk.text(msg),
                    raw=raw,
                )


def _text(blk: Block, first: str) -> str:
    """A record's verbatim text: the rest of its header line (its own line), then the body."""
    return blk.text(f"{first}\n") if first else blk.text()


class _Chat:
    """The mid-2023 record shapes: the current phase and the two sides of its chat."""

    def __init__(self) -> None:
        self.phase: str | None = None
        self.sides: dict[str, str] = {}

    def step(
        self, msg: str, blk: Block, stamp: str, raw: dict, facts: Facts, b: StepBuilder
    ) -> TraceStep | None:
        if phase := _PHASE.match(msg):
            self.phase, self.sides = phase.group("phase"), {}
            return b.add(
                timestamp=stamp,
                actor="ChatDev",
                actor_kind=ActorKind.system,
                content=_text(blk, msg),
                raw=raw,
            )
        if msg.rstrip() == "Task prompt:":
            text = blk.text()
            if facts.task is None and text:
                facts.task = text
            return b.add(
                timestamp=stamp,
                actor="ChatDev",
                actor_kind=ActorKind.system,
                content=_text(blk, msg),
                raw=raw,
            )
        role = _ROLE.match(msg)
        if role is None:
            return None
        side, name, what = role.group("side").lower(), role.group("role"), role.group("what")
        raw = {**raw, "side": side, **({"phase": self.phase} if self.phase else {})}
        if role.group("turn"):
            raw["turn"] = int(role.group("turn"))
        if what == " sys message:":
            self.sides[side] = name
            return b.add(
                timestamp=stamp,
                actor="system",
                actor_kind=ActorKind.system,
                recipients=[name],
                content=_text(blk, role.group("rest")),
                raw={**raw, "record": "sys_message"},
            )
        if what != ":":  # ChatDev's notice that a side ended the chat
            return b.add(
                timestamp=stamp,
                actor="ChatDev",
                actor_kind=ActorKind.system,
                content=_text(blk, msg),
                raw={**raw, "record": "terminated", "role": name},
            )
        other = self.sides.get("user" if side == "assistant" else "assistant")
        holds_side = self.sides.get(side) == name
        return b.add(
            timestamp=stamp,
            actor=name,
            recipients=[other] if holds_side and other else None,
            content=_text(blk, role.group("rest")),
            raw=raw,
        )


FORMAT = ChatDevFormat()

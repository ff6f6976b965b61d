"""ChatDev: a plain log of ``[YYYY-DD-MM HH:MM:SS LEVEL] …`` records (day before month).

A turn header ``<Speaker>: **<A><-><B> on : <Phase>, turn N**`` names both roles of the chat, so
the recipient is the other role of the pair. ``<Speaker>: **[Start Chat]**`` has no named
recipient. ``System: **[…]**`` records are the framework's, and ``**[Seminar Conclusion]**``,
``**[Update Codes]**`` and the like are ChatDev's own records (actor ``ChatDev``). Noise records
(``flask app.py did not start``, ``HTTP Request:``, ``**[OpenAI_Usage_Info Receive]**``) are not
steps; their counts go to ``header.metadata.skipped_records``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ingest.base import Facts, StepBuilder
from ingest.frameworks.common import Source, blocks
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
        return None

    def parse(self, source: Source, facts: Facts, b: StepBuilder) -> Iterator[TraceStep]:
        for blk in blocks(source.lines(), _RECORD.match):
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
            if msg.strip() in _NOISE or msg.startswith("HTTP Request:"):
                facts.count(_NOISE.get(msg.strip(), "http_request"))
                continue
            if turn := _TURN.match(msg):
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


FORMAT = ChatDevFormat()

"""What the framework log parsers share: where the log text comes from, and header-delimited blocks.

A framework's raw log is met in two places: as its own file, and as the ``trace`` string of a
MAST/MAD corpus record. A :class:`Source` hides the difference, so one parser serves both.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from ingest.base import Facts, StepBuilder
from ingest.jsonstream import JsonReader
from ingest.textlines import file_lines, join_block, string_lines
from schemas.trace import ActorKind, TraceStep, WithheldItem


@dataclass(frozen=True)
class Source:
    """A raw log: a file on disk, or a string inside a corpus record (``where`` names it)."""

    where: str
    path: Path | None = None
    text: str | None = None

    def lines(self) -> Iterator[str]:
        return file_lines(self.path) if self.path is not None else string_lines(self.text or "")

    def open(self) -> BinaryIO:
        if self.path is not None:
            return self.path.open("rb")
        return io.BytesIO((self.text or "").encode("utf-8"))

    def json(self, stream: BinaryIO) -> JsonReader:
        return JsonReader(stream, self.where)


class LogFormat(Protocol):
    """One framework's raw log format."""

    name: str
    framework: str

    def sniff(self, head: str) -> str | None:
        """A reason when the head of a log looks like this format, else None."""
        ...

    def parse(self, source: Source, facts: Facts, b: StepBuilder) -> Iterator[TraceStep]: ...


@dataclass
class Block:
    """A header line and the lines that follow it until the next header."""

    match: re.Match[str] | None
    line: int
    body: list[str] = field(default_factory=list)

    def text(self, first: str = "") -> str:
        """The verbatim content: the rest of the header line, then the body."""
        return join_block([first, *self.body]) if first else join_block(self.body)


def blocks(lines: Iterable[str], header: Callable[[str], re.Match[str] | None]) -> Iterator[Block]:
    """Group lines into blocks that each start at a header line; lines before the first header form
    a block whose ``match`` is None. A header pattern's optional ``prefix`` group (text before the
    header on its line) stays with the previous block."""
    current = Block(None, 1)
    for n, line in enumerate(lines, start=1):
        m = header(line.rstrip("\r\n"))
        if m is not None:
            prefix = m.groupdict().get("prefix")
            if prefix:  # text printed without a newline before the header ends the previous block
                current.body.append(prefix)
            if current.match is not None or any(x.strip() for x in current.body):
                yield current
            current = Block(m, n)
        else:
            current.body.append(line)
    if current.match is not None or any(x.strip() for x in current.body):
        yield current


def withhold(facts: Facts, labels: dict[str, Any], key: str, value: Any, what: str, rule: str) -> None:
    """Move a source field out of the trace into the sidecar labels, and record that it happened."""
    labels[key] = value
    facts.withheld.append(WithheldItem(what=what, where=f"source field '{key}'", rule=rule))


def harness_exit(
    b: StepBuilder, status: Any, content: str = "", raw: dict[str, Any] | None = None
) -> TraceStep:
    """The harness's record that it ended a run other than by the agent's submission (a step,
    cost or context limit, an error; or a submission of nothing, ``empty_submission``): a
    ``system`` step, the framework speaking, whose content is the record verbatim (the status
    itself where the harness wrote no message); ``raw.record = "exit"`` and ``raw.exit_status``
    let a reader find it."""
    return b.add(
        actor="harness",
        actor_kind=ActorKind.system,
        content=content or str(status),
        raw=(raw or {}) | {"record": "exit", "exit_status": status},
    )


def empty_submission(
    b: StepBuilder, status: Any, content: str = "", raw: dict[str, Any] | None = None
) -> TraceStep:
    """The harness's record that the run was submitted with no change at all (an empty diff): the
    run's end, marked ``raw.empty_submission``, since no ``final_output`` holds a submission."""
    return harness_exit(b, status, content, (raw or {}) | {"empty_submission": True})


def exit_marks(code: Any) -> dict[str, Any]:
    """A shell's recorded exit code as its result's ``raw``: ``exit_code``, a non-zero one failing
    it (status ``error``, ``error_type: exit_code``); nothing where no integer code was recorded."""
    if not isinstance(code, int) or isinstance(code, bool):
        return {}
    return {"exit_code": code} | ({"status": "error", "error_type": "exit_code"} if code else {})


def pack_raw(**fields: Any) -> dict[str, Any]:
    """``raw`` without empty entries."""
    return {k: v for k, v in fields.items() if v not in (None, "", [], {})}


NOTE_RULE = "mast.note: the MAST annotator's note (free text and yes/no options) beside the log"


def mast_record(
    source: Source,
    facts: Facts,
    trajectory: Callable[[JsonReader], Iterator[TraceStep]],
    what: Callable[[str], str],
    rule: str,
) -> Iterator[TraceStep]:
    """Read a MAST structured record (``instance_id, problem_statement, other_data, trajectory,
    note``): the trajectory becomes steps, the problem statement the task, and ``other_data`` and
    ``note`` are withheld into the labels (``what(sub_key)`` names each ``other_data`` field)."""
    with source.open() as stream:
        reader = source.json(stream)
        for key in reader.members():
            if key == "trajectory":
                yield from trajectory(reader)
            elif key == "problem_statement":
                value = reader.value()
                facts.task = "\n".join(map(str, value)) if isinstance(value, list) else str(value)
            elif key == "other_data":
                value = reader.value()
                for sub, item in value.items() if isinstance(value, dict) else [("value", value)]:
                    withhold(facts, facts.labels, f"other_data.{sub}", item, what(sub), rule)
            elif key == "note":
                withhold(facts, facts.labels, "note", reader.value(), "annotator_note", NOTE_RULE)
            else:
                facts.metadata[key] = reader.value()
        reader.end()

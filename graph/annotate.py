"""The annotation layer: authority, permission and unconsulted obligations, and edge summaries.

Everything here is extractive and deterministic (no model): a label always points at the step
(and edge) or the header metadata field it was read from, with the quote that states it. The
provenance part of the layer lives in ``graph.provenance``; ``Annotations.to_dict`` exports all.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from graph.instructions import InstructionSpan, instruction_spans
from graph.model import lower_text
from graph.obligations import UnconsultedObligation, find_unconsulted
from schemas import StepKind, TraceStep

if TYPE_CHECKING:
    from graph.model import InteractionGraph

SUMMARY_CHARS = 160
_SENTENCE_END = re.compile(r"(?<=[.!?])\s|\n")
_TITLE = r"(?:CFO|CEO|COO|CTO|CISO|VP [\w ]{2,30}?|director(?: of [\w ]{2,30}?)?|(?:finance |general )?manager|head of [\w ]{2,30}?|controller|administrator|owner|supervisor|officer|auditor|approver)"
_AUTHORITY = (
    (
        "title",
        re.compile(rf"(?i:\b(?:I am|I'm|speaking as|acting as) (?:the |a |an |your )?)(?P<what>{_TITLE})\b"),
    ),
    (
        "claim",
        re.compile(
            r"(?i:\bI (?:hereby )?(?P<what>(?:approve|authori[sz]e|sign off on|reject|deny|override|waive)\b[^.\n]{0,60}))"
        ),
    ),
    ("delegation", re.compile(r"(?i:\bon behalf of (?P<what>(?:the )?[\w .'-]{2,40}?))(?=[,.;\n]|$)")),
    (
        "attributed",
        re.compile(
            r"(?i:\b(?:approved|authori[sz]ed|signed off) by (?P<what>(?:the )?[\w .'-]{2,40}?))(?=[,.;\n]|$)"
        ),
    ),
)
_PERMISSION = (
    (
        True,
        re.compile(
            r"(?i:\bonly (?P<who>(?:the )?[\w -]{2,30}?) (?:can|may|is allowed to|are allowed to|is permitted to|are permitted to) (?P<act>[^.\n]{2,60}))"
        ),
    ),
    (
        False,
        re.compile(
            r"(?i:\b(?P<who>(?:the )?[\w-]{2,30}) (?:must not|may not|cannot|can't|is not allowed to|are not allowed to|should not) (?P<act>(?:see|view|access|share|disclose|receive|approve|send|forward|read)\b[^.\n]{0,60}))"
        ),
    ),
    (
        False,
        re.compile(
            r"(?i:\b(?P<act>[\w -]{2,30}?) (?:is|are) (?P<who>confidential|restricted|internal only|need-to-know)\b)"
        ),
    ),
)
_THE = re.compile(r"^the\s+", re.IGNORECASE)
# one cheap pass finds the steps worth running the label patterns on
_TRIGGER = (  # over the graph's lower-cased text blob
    r"\b(?:i am|i'm|speaking as|acting as|i (?:hereby )?(?:approve|authori|sign off|reject|deny|override|waive)"
    r"|on behalf of|(?:approved|authori[sz]ed|signed off) by|only|must not|may not|cannot|can't|not allowed"
    r"|should not|confidential|restricted|internal only|need-to-know)\b"
)
# indexed by text.isascii(): on ASCII text \b means the same under re.ASCII, without a call into
# the Unicode database at every position
_TRIGGERS = (re.compile(_TRIGGER), re.compile(_TRIGGER, re.ASCII))
CUE_STRETCH = 4096  # steps whose text is searched for cues at once


@dataclass(frozen=True, slots=True)
class AuthorityLabel:
    """A participant claims or holds authority; ``basis`` says on what (role_card, title, claim,
    delegation, attributed)."""

    participant: str
    authority: str
    basis: str
    step_id: str | None
    edge_ref: str | None
    quote: str


@dataclass(frozen=True, slots=True)
class PermissionLabel:
    """Who may (``allowed``) or may not see or do what, as the trace or its metadata states it."""

    subject: str
    action: str
    allowed: bool
    basis: str
    step_id: str | None
    edge_ref: str | None
    quote: str


@dataclass
class Annotations:
    """The labels of one graph's annotation layer (absent in topology mode); the edge summaries
    live on the edges (attribute ``summary``) and the provenance in ``graph.provenance``."""

    authority: list[AuthorityLabel] = field(default_factory=list)
    permission: list[PermissionLabel] = field(default_factory=list)
    obligations: list[UnconsultedObligation] = field(default_factory=list)
    instructions: list[InstructionSpan] = field(default_factory=list)

    def parts(self, ig: InteractionGraph) -> dict[str, Any]:
        """Plain data for export: labels, merge points and each value's first appearance (the
        values, one per distinct value of the trace, as an iterator: see ``graph.export``)."""
        prov = ig.provenance
        assert prov is not None
        return {
            "authority": [asdict(a) for a in self.authority],
            "permission": [asdict(p) for p in self.permission],
            "unconsulted_obligations": [asdict(o) for o in self.obligations],
            "instructions": [i.to_dict() for i in self.instructions],
            "merge_points": [asdict(m) for m in prov.merge_points],
            "values": _first_appearances(ig),
        }

    def to_dict(self, ig: InteractionGraph) -> dict[str, Any]:
        """``parts`` with every list made."""
        return {k: list(v) if k == "values" else v for k, v in self.parts(ig).items()}


def _first_appearances(ig: InteractionGraph) -> Iterator[dict[str, Any]]:
    prov = ig.provenance
    assert prov is not None
    steps_at = ig.trace.steps
    for kind, norm in sorted(prov.exact):
        codes = prov.exact[kind, norm]
        steps = sorted({steps_at[c // prov.stride].step_id for c in codes}, key=ig.step_pos.__getitem__)
        yield {"kind": kind, "value": norm, "first_step": steps[0], "carriers": len(steps)}


def summarise(step: TraceStep) -> str:
    """An extractive one-line summary: the tool call, else the first sentence, cut to length."""
    if step.tool is not None and step.kind == StepKind.tool_call:
        args = step.tool.arguments
        text = (
            f"{step.tool.name}({args if isinstance(args, str) else ', '.join(f'{k}=' for k in args or {})})"
        )
    else:
        flat = step.content.strip()
        text = _SENTENCE_END.split(flat, maxsplit=1)[0] if flat else ""
    text = " ".join(text.split())
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"


def _quote(text: str, m: re.Match[str]) -> str:
    return text[m.start() : m.end()].strip()


def _cued(ig: InteractionGraph) -> list[int]:
    """Positions of the steps whose text holds a label cue. The lower-cased text is made one
    stretch of steps at a time and dropped, not kept on the graph (which makes its own when a
    query searches text): a whole trace's copy would cost as much memory as its content. No cue
    spans two steps (the text between steps is a NUL), so the stretches find what one pass would."""
    steps = ig.trace.steps
    cued: list[int] = []
    for lo in range(0, len(steps), CUE_STRETCH):
        blob, starts = lower_text(steps[lo : lo + CUE_STRETCH])
        trigger = _TRIGGERS[blob.isascii()]
        cued += sorted({lo + bisect_right(starts, m.start()) - 1 for m in trigger.finditer(blob)})
    return cued


def _labels_from_steps(ig: InteractionGraph, ann: Annotations) -> None:
    """Run the label patterns on the steps where one cheap pass over all the text found a cue."""
    for pos in _cued(ig):
        step = ig.trace.steps[pos]
        text, first_edge = step.content, ig.step_edges[pos][0]
        for basis, pattern in _AUTHORITY:
            for m in pattern.finditer(text):
                ann.authority.append(
                    AuthorityLabel(
                        step.actor if basis != "attributed" else m["what"].strip(),
                        m["what"].strip(),
                        basis,
                        step.step_id,
                        first_edge,
                        _quote(text, m),
                    )
                )
        for allowed, pattern in _PERMISSION:
            for m in pattern.finditer(text):
                subject = (
                    "*"
                    if m["who"].lower() in ("confidential", "restricted", "internal only", "need-to-know")
                    else _THE.sub("", m["who"].strip())
                )
                ann.permission.append(
                    PermissionLabel(
                        subject,
                        m["act"].strip(),
                        allowed,
                        "stated",
                        step.step_id,
                        first_edge,
                        _quote(text, m),
                    )
                )


def _labels_from_metadata(ig: InteractionGraph, ann: Annotations) -> None:
    meta = ig.trace.header.metadata
    for key in ("roles", "role_cards", "system_prompt", "system_prompts"):
        cards = meta.get(key)
        if isinstance(cards, dict):
            for name, card in cards.items():
                quote = " ".join(str(card).split())[:SUMMARY_CHARS]
                ann.authority.append(
                    AuthorityLabel(str(name), quote, "role_card", None, None, f"header.metadata.{key}")
                )
    perms = meta.get("permissions")
    if isinstance(perms, dict):
        for subject, actions in perms.items():
            for action in [actions] if isinstance(actions, str) else list(actions or []):
                ann.permission.append(
                    PermissionLabel(
                        str(subject), str(action), True, "metadata", None, None, "header.metadata.permissions"
                    )
                )
    elif isinstance(perms, list):
        for item in perms:
            if isinstance(item, dict) and "subject" in item and "action" in item:
                allowed = bool(item.get("allowed", True))
                ann.permission.append(
                    PermissionLabel(
                        str(item["subject"]),
                        str(item["action"]),
                        allowed,
                        "metadata",
                        None,
                        None,
                        "header.metadata.permissions",
                    )
                )


def annotate(ig: InteractionGraph) -> Annotations:
    """Build the annotation layer (the edge summaries were put on the edges as they were built)."""
    ann = Annotations()
    _labels_from_metadata(ig, ann)
    _labels_from_steps(ig, ann)
    ann.obligations = find_unconsulted(ig)
    ann.instructions = instruction_spans(ig.trace)
    return ann

"""Channels: whose word a step's content is — the principal's, or data.

An agent takes instructions from its **principal** (the system prompt, the user's own messages, a
participant a policy declares a principal, such as a human approver) and reads everything else as
**data**: tool results, retrieved documents, web pages, e-mails, files, and content relayed from
other agents. Data can say anything, including "send the money to …"; it never carries the
principal's authority.

The channel follows from what the importers already record, so it needs no field of its own (a new
step field would change every stored trace's digest): a step acted by a human or the system is the
principal's; a tool result, a document read, or a step acted by a tool or the environment is data,
whatever it says (a chat log's ``tool`` message is imported as a tool result); an agent's own
messages and calls are the agent's (``agent``), which, seen from another agent, are relayed data.
Declarations override the default by participant name: ``principals`` (e.g. an approver agent)
and ``data_sources`` (e.g. a sub-agent whose output must be treated as data).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from schemas import ActorKind, StepKind, TraceStep


class Channel(StrEnum):
    principal = "principal"
    data = "data"
    agent = "agent"


_DATA_KINDS = frozenset({StepKind.tool_result, StepKind.document_read})
_DATA_ACTORS = frozenset({ActorKind.tool, ActorKind.environment})
_PRINCIPAL_ACTORS = frozenset({ActorKind.human, ActorKind.system})


@dataclass(frozen=True)
class ChannelDeclarations:
    """Participants whose channel a policy states, overriding what their steps' kinds say."""

    principals: frozenset[str] = field(default_factory=frozenset)
    data_sources: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def of(cls, principals: Iterable[str] = (), data_sources: Iterable[str] = ()) -> ChannelDeclarations:
        return cls(frozenset(principals), frozenset(data_sources))


NO_DECLARATIONS = ChannelDeclarations()


def channel_of(step: TraceStep, declared: ChannelDeclarations = NO_DECLARATIONS) -> Channel:
    """The channel of one step (the module doc gives the rule)."""
    if step.actor in declared.data_sources:
        return Channel.data
    if step.actor in declared.principals:
        return Channel.principal
    if step.kind in _DATA_KINDS or step.actor_kind in _DATA_ACTORS:
        return Channel.data
    if step.actor_kind in _PRINCIPAL_ACTORS:
        return Channel.principal
    return Channel.agent

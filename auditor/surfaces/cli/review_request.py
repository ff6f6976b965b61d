"""What `auditor review` was asked to do, every option checked before the input is read: a wrong
format, graph mode, outcome, output path, redaction pattern, policy file or agent setting is one
input error naming its option, and nothing has been stored when it is raised."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from auditor.core.errors import InputError
from auditor.surfaces.cli.common import output_target, redaction
from schemas import GraphMode

if TYPE_CHECKING:
    from auditor.audit.policy import Policy
    from auditor.audit.review import AgentOptions

FORMATS = ("summary", "json", "md", "html", "sarif")


@dataclass(frozen=True)
class AgentRequest:
    """The agent engine's options as given (checked only when the agent engine is chosen)."""

    model: str
    contract: str
    seed_findings: str | None
    max_tool_calls: int
    max_tokens: int
    max_seconds: float


@dataclass(frozen=True)
class ReviewRequest:
    """A review's options once checked: the input, how to audit it, and where the report goes."""

    path: str
    input_format: str
    mode: GraphMode
    engine: str
    policy: Policy | None
    detectors: list[str] | None
    agent: AgentOptions | None
    redact: bool
    patterns: dict[str, str]
    trace_id: str | None
    outcome: str | None
    output: Path | None
    fmt: str
    as_json: bool
    quiet: bool

    @classmethod
    def checked(
        cls,
        *,
        path: str,
        input_format: str,
        graph: str,
        engine: str,
        agent: AgentRequest,
        policy: Path | None,
        detectors: str | None,
        output: Path | None,
        fmt: str | None,
        as_json: bool,
        quiet: bool,
        redact: bool,
        redact_pattern: list[str],
        trace_id: str | None,
        outcome: str | None,
    ) -> ReviewRequest:
        """The request the options make, or the first mistake among them as an input error. The
        format defaults to JSON for --json or an output file named *.json, else the summary."""
        fmt = fmt or ("json" if as_json else ("json" if output and output.suffix == ".json" else "summary"))
        if fmt not in FORMATS:
            raise InputError(
                f"unknown format '{fmt}'", field="--format", hint=f"use one of {', '.join(FORMATS)}"
            )
        try:
            mode = GraphMode(graph)
        except ValueError:
            raise InputError(
                f"unknown graph mode '{graph}'", field="--graph", hint="annotated, topology or none"
            ) from None
        from auditor.audit.incident import OUTCOMES

        if outcome is not None and outcome not in OUTCOMES:
            raise InputError(
                f"unknown outcome '{outcome}'", field="--outcome", hint="failed, succeeded or unknown"
            )
        if output is not None and str(output) != "-":
            output_target(output)  # refused before anything is stored
        redact, patterns = redaction(redact, redact_pattern)
        loaded_policy = None
        if policy is not None:
            from auditor.audit.policy import load_policy

            loaded_policy = load_policy(policy)
        return cls(
            path=path,
            input_format=input_format,
            mode=mode,
            engine=engine,
            policy=loaded_policy,
            detectors=[d.strip() for d in detectors.split(",")] if detectors else None,
            agent=_agent_options(agent) if engine == "agent" else None,
            redact=redact,
            patterns=patterns,
            trace_id=trace_id,
            outcome=outcome,
            output=output,
            fmt=fmt,
            as_json=as_json,
            quiet=quiet,
        )

    @property
    def from_stdin(self) -> bool:
        return self.path == "-"

    @property
    def file_format(self) -> str:
        """The format of the report written to --output: the terminal's summary is written as JSON."""
        return self.fmt if self.fmt != "summary" else "json"


def _agent_options(agent: AgentRequest) -> AgentOptions:
    """The agent engine's options, its contract and seed checked."""
    from auditor.audit.agent import CONTRACTS
    from auditor.audit.agent.loop import Budget
    from auditor.audit.review import AgentOptions

    if agent.contract not in CONTRACTS:
        raise InputError(f"unknown contract '{agent.contract}'", field="--contract", hint="v3 or naive")
    if agent.seed_findings not in (None, "rules"):
        raise InputError("--seed-findings takes only 'rules'", field="--seed-findings")
    budget = Budget(agent.max_tool_calls, agent.max_tokens, agent.max_seconds)
    return AgentOptions(agent.model, agent.contract, agent.seed_findings, budget)

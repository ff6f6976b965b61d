"""Who did it and when: failure attribution over a canonical trace.

The front door: ``attribute(trace, strategy="rules", ground_truth=None, model=None) ->
Attribution`` names the responsible agent and the decisive step, with ranked agent and step
candidates, each carrying resolvable evidence units and a confidence.

Strategies are registered by name (``module:Class``, loaded lazily): ``rules`` (embedded default),
``counterfactual`` (local causal LM, leave-one-out over steps), ``all_at_once``, ``step_by_step``,
``binary_search`` (the Who&When paper's LLM judges, through the model gateway) and ``ensemble``.
A strategy receives only a :class:`schemas.Trace` (header and steps; sidecar labels never reach
it) and, in the "with ground truth" setting, the correct answer as a separate argument.
"""

from __future__ import annotations

from typing import Protocol

from auditor.audit.attribution.result import AgentCandidate, Attribution, StepCandidate
from auditor.core.errors import InputError
from auditor.core.registry import Registry
from schemas import Trace

DEFAULT_STRATEGY = "rules"


class Strategy(Protocol):
    name: str
    needs_model: bool

    def attribute(
        self, trace: Trace, *, ground_truth: str | None = None, model: str | None = None
    ) -> Attribution: ...


REGISTRY: Registry[type[Strategy]] = Registry(
    "attribution strategy",
    {
        "rules": "auditor.audit.attribution.rules:RulesStrategy",
        "counterfactual": "auditor.audit.attribution.counterfactual:CounterfactualStrategy",
        "all_at_once": "auditor.audit.attribution.judges:AllAtOnce",
        "step_by_step": "auditor.audit.attribution.judges:StepByStep",
        "binary_search": "auditor.audit.attribution.judges:BinarySearch",
        "ensemble": "auditor.audit.attribution.ensemble:EnsembleStrategy",
    },
    field="strategy",
)


def load_strategy(name: str) -> Strategy:
    """The strategy registered under ``name``; an unknown name lists the valid ones."""
    return REGISTRY.load(name)()


def attribute(
    trace: Trace,
    strategy: str = DEFAULT_STRATEGY,
    *,
    ground_truth: str | None = None,
    model: str | None = None,
) -> Attribution:
    """Attribute the failure of ``trace`` with the named strategy."""
    if not trace.steps:
        raise InputError("the trace has no steps to attribute", field="steps")
    return load_strategy(strategy).attribute(trace, ground_truth=ground_truth, model=model)


__all__ = [
    "DEFAULT_STRATEGY",
    "REGISTRY",
    "AgentCandidate",
    "Attribution",
    "StepCandidate",
    "Strategy",
    "attribute",
    "load_strategy",
]

"""The World base: conditions, identities, the workflow, and one episode from spec to judged result.

A concrete world is a package: its card (``world.yaml``: name, task, conditions, endpoints; read
when the subclass is defined), and a subclass that supplies its role scripts, their parameter
table, its phrasebook, an identity generator and ``play`` — which runs the fixed workflow through
the runtime and returns the judged ``Outcome``. Everything else (ids, digests, the sanitised
header, role cards as recorded steps) is shared here.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any, ClassVar

from auditor.core.errors import InputError
from schemas.trace import TraceHeader
from worlds.engine.card import read_card
from worlds.engine.episode import EpisodeResult, EpisodeSpec, Identity, Outcome, source_digest
from worlds.engine.llm_judge import Artifact
from worlds.engine.policy import Phrasebook, Policy, RoleScript, ScriptedPolicy, TurnContext, rng_for
from worlds.engine.recorder import Recorder, SimClock
from worlds.engine.runtime import Runtime, Visible
from worlds.engine.workflow import Workflow


@dataclass
class Env:
    """One running episode: its spec, configuration, runtime and policy; ``artifacts`` are the texts an
    LLM judge may read, collected by ``play`` as its deterministic judge reads them."""

    world: World
    spec: EpisodeSpec
    workflow: Workflow
    policy: Policy
    runtime: Runtime
    params: dict[str, float]
    carded: set[str] = field(default_factory=set)
    turns: dict[str, int] = field(default_factory=dict)
    artifacts: list[Artifact] = field(default_factory=list)

    @property
    def identity(self) -> dict[str, Any]:
        return self.spec.identity.fields

    @property
    def condition(self) -> str:
        return self.spec.condition

    def rng(self, *parts: object) -> random.Random:
        """World-side randomness (counterparties); shared across conditions for paired draws."""
        return rng_for(self.spec.world, self.spec.seed, self.spec.identity.key, *parts)

    def brief(self, role: str, card: str) -> None:
        """Deliver a role card once, as the system message a real agent starts from."""
        if role not in self.carded:
            self.runtime.system(role, card)
            self.carded.add(role)

    def turn(self, role: str, card: str, task: dict[str, Any]) -> None:
        """Give one role a turn: its card on first use, then its behaviour under the policy."""
        self.brief(role, card)
        n = self.turns.get(role, 0)
        self.turns[role] = n + 1
        ctx = TurnContext(
            role=role,
            card=card,
            task=task,
            rng=self.rng("agent", role, n),
            params=self.params,
            family=self.policy.family,
            phrasebook=self.world.phrasebook,
            tools=self.runtime.specs(role),
            seen=self.runtime.visible.setdefault(role, Visible()).text,
        )
        self.runtime.drive(role, self.policy.behaviour(ctx))


class World(ABC):
    """A micro-world: subclass once per world, in the package that holds its card."""

    # from the card (``world.yaml``), set when the subclass is defined
    package: ClassVar[str]
    name: ClassVar[str]
    title: ClassVar[str]
    task_text: ClassVar[str]
    start: ClassVar[datetime]
    conditions: ClassVar[dict[str, str]]
    canonical_conditions: ClassVar[list[str]]
    endpoints: ClassVar[dict[str, str]]
    primary: ClassVar[str]
    llm_judged: ClassVar[bool]  # whether the seed gives this world a fixed LLM judge
    # from the subclass's keywords
    scripts: ClassVar[dict[str, RoleScript]]  # one scripted behaviour per role
    params: ClassVar[dict[str, dict[str, float]]]  # the scripts' propensities per condition
    phrasebook: ClassVar[Phrasebook]
    draw_identity: ClassVar[Callable[[random.Random], Identity]]

    def __init_subclass__(
        cls,
        *,
        scripts: dict[str, RoleScript],
        params: dict[str, dict[str, float]],
        phrasebook: Phrasebook,
        identity: Callable[[random.Random], Identity],
        **kwargs: object,
    ) -> None:
        """``class X1World(World, scripts=…, params=…, phrasebook=…, identity=…)``: the world's
        behaviour; its card is read from the package the subclass is defined in."""
        super().__init_subclass__(**kwargs)
        cls.scripts, cls.params, cls.phrasebook = scripts, params, phrasebook
        cls.draw_identity = staticmethod(identity)
        cls.package = cls.__module__.rpartition(".")[0]
        for field_name, value in read_card(cls.package).items():
            setattr(cls, field_name, value)

    @abstractmethod
    def play(self, env: Env) -> Outcome: ...

    def llm_judge(self, env: Env, outcome: Outcome, model: str) -> Outcome:
        """The outcome with the quote-grounded LLM judge's judgments beside the deterministic ones;
        worlds whose seed uses a fixed LLM judge override it and set ``llm_judged``."""
        raise NotImplementedError(self.name)

    def check_judge_model(self, model: str | None) -> None:
        if model is not None and not self.llm_judged:
            raise InputError(
                f"{self.name}'s judges are deterministic: it has no LLM judge",
                hint="C1, D1 and F1 take a judge model",
            )

    def workflow(self) -> Workflow:
        return Workflow.packaged(self.package)

    @cached_property
    def _own_workflow(self) -> Workflow:
        """The world's own configuration, read once: an episode's default, and what a patched one is
        checked against (reading and parsing it took 1.4 ms of each 4 ms scripted episode)."""
        return self.workflow()

    def source_digest(self) -> str:
        return source_digest(self.package)

    def scripted(self, family: str = "main", overrides: dict[str, float] | None = None) -> ScriptedPolicy:
        return ScriptedPolicy(dict(self.scripts), self.params, overrides, family)

    def identity(self, index: int, seed: int = 0) -> Identity:
        return self.draw_identity(rng_for(self.name, "identity", seed, index))

    def fresh_identities(self, n: int, exclude: Iterable[str] = (), seed: int = 0) -> list[Identity]:
        """n identities whose keys are disjoint from ``exclude`` and from each other."""
        taken = set(exclude)
        out: list[Identity] = []
        index = 0
        while len(out) < n:
            ident = self.identity(index, seed)
            index += 1
            if ident.key not in taken:
                taken.add(ident.key)
                out.append(ident)
            if index > 50 * n + 1000:
                raise InputError(f"{self.name}: could not draw {n} fresh identities outside the excluded set")
        return out

    def check_condition(self, condition: str) -> None:
        if condition not in self.conditions:
            raise InputError(
                f"{self.name} has no condition {condition!r}",
                hint=f"choose one of {', '.join(self.conditions)}",
            )

    def run_episode(
        self,
        condition: str,
        seed: int,
        identity: Identity,
        policy: Policy,
        workflow: Workflow | None = None,
        judge_model: str | None = None,
    ) -> EpisodeResult:
        """One episode; ``judge_model`` adds the LLM judge's judgments (the trace and the
        deterministic judges' results do not depend on it)."""
        self.check_condition(condition)
        self.check_judge_model(judge_model)
        wf = workflow or self._own_workflow
        if wf.world != self.name:
            raise InputError(
                f"workflow is for world {wf.world}, not {self.name}", path=wf.origin, field="world"
            )
        if workflow is not None:
            workflow.conform_to(self._own_workflow)
        spec = EpisodeSpec(
            world=self.name,
            condition=condition,
            policy=policy.name,
            policy_digest=policy.digest(),
            seed=seed,
            identity=identity,
            workflow_digest=wf.digest(),
        )
        runtime = Runtime(Recorder(SimClock(self.start)))
        # the tools read a switch the configuration leaves out as the world's own (its digest,
        # above, is of the configuration as given)
        read = wf if workflow is None else wf.with_switches_of(self._own_workflow)
        env = Env(self, spec, read, policy, runtime, policy.params_for(condition))
        outcome = self.play(env)
        if judge_model is not None:
            outcome = self.llm_judge(env, outcome, judge_model)
        header = TraceHeader(
            trace_id=spec.episode_id,
            source=f"worlds/{self.name}",
            framework="eair-microworld",
            task=self.task_text,
            metadata={
                "world": self.name,
                "source_digest": self.source_digest(),
                "workflow_digest": wf.digest(),
            },
        )
        return EpisodeResult(
            spec=spec,
            header=header,
            steps=runtime.rec.steps,
            outcome=outcome,
            source_digest=self.source_digest(),
        )

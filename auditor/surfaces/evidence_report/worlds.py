"""World-evidence tables from the cohorts recorded in the store (``WorldCohortRecorded`` manifests
and their ``WorldEpisodeRecorded`` episodes).

Endpoint rates come from ``worlds.engine.cohort.summarise`` (Wilson 95%, unassessed outcomes left
out); contrasts pair the same implementation, seed and identity under two conditions (exact
McNemar) with an implementation-clustered bootstrap of the rate difference; the implementation ×
risk matrix and its rank correlations use ``scoring.stats``; the C1, D1 and F1 tables tabulate the
mechanism measures those worlds' judges record on every episode. Every row from a scripted policy
is labelled a simulation: it shows how the seeded behaviour plays out, not how a model behaves.

This module imports ``worlds``: the evidence report is an assembly over the packages (nothing in
``worlds`` imports it back).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from itertools import combinations

from auditor.surfaces.evidence_report.source import Evidence
from auditor.surfaces.evidence_report.table import Bar, Bubble, Figure, Table, placeholder
from scoring.stats import cluster_bootstrap_difference, mcnemar_exact, rank_noise_floor, wilson_rate
from worlds import Cohort, EpisodeResult, get_world, list_worlds, summarise
from worlds.c1.judge import HOPS as C1_HOPS
from worlds.engine.persist import stored_cohorts

SCRIPTED = ("scripted", "fixed")
MIN_SHARED = 3  # implementations two worlds must share for a rank correlation
RUN_COMMAND = "auditor world run {world} --episodes 20"
F1_DEPTHS = {
    1: "1: decisive clause fully detected",
    2: "2: not fully detected, summary keeps a risk signal",
    3: "3: signal lost, stopped at approval",
    4: "4: complete cascade (signed)",
}


@dataclass(frozen=True)
class StoredCohort:
    """A cohort read back from the store, with how the tables name and label it."""

    cohort: Cohort

    @property
    def implementation(self) -> str:
        return implementation(self.cohort.policy, self.cohort.policy_digest)

    @property
    def simulation(self) -> bool:
        return self.cohort.policy in SCRIPTED


def implementation(policy: str, digest: str) -> str:
    """A policy by name and digest: two models behind the same ``llm`` policy stay apart."""
    return f"{policy}:{digest[:8]}"


def evidence_label(policy: str) -> str:
    return "simulation (scripted policy)" if policy in SCRIPTED else "model measurement"


def _cohorts(ev: Evidence) -> list[StoredCohort]:
    """The store's cohorts, read once per report."""
    return ev.memo("world-cohorts", lambda store: [StoredCohort(c) for c in stored_cohorts(store)])


def _episodes(ev: Evidence, world: str) -> list[EpisodeResult]:
    """One world's episodes across cohorts, each once (cohorts may share episodes)."""
    seen: dict[str, EpisodeResult] = {}
    for c in _cohorts(ev):
        if c.cohort.world == world:
            for e in c.cohort.episodes:
                seen.setdefault(e.episode_id, e)
    return list(seen.values())


def _source(cohorts: list[StoredCohort]) -> str:
    parts = sorted({f"{c.implementation} ({evidence_label(c.cohort.policy)})" for c in cohorts})
    return "policies " + ", ".join(parts)


def _rate_cell(k: int, n: int) -> str:
    if n == 0:
        return "no rate (none assessed)"
    r = wilson_rate(k, n)
    return f"{k}/{n} {r.value:.1%} [{r.low:.1%}, {r.high:.1%}]"


ENDPOINT_COLUMNS = ["cohort", "implementation", "evidence", "condition", "endpoint", "n/N", "rate", "95% CI"]


def endpoint_rates(ev: Evidence) -> list[Table]:
    """Per world: each cohort's endpoint rates per condition and pooled, Wilson 95%."""
    out = []
    for name in list_worlds():
        world = get_world(name)
        key, title = f"world-{name}-endpoints", f"World {name}: endpoint rates per condition ({world.title})"
        denominator = (
            "episodes of the cohort and condition whose endpoint was assessed (unassessed are left out, "
            f"never zeros); * marks the primary endpoint {world.primary}"
        )
        cohorts = [c for c in _cohorts(ev) if c.cohort.world == name]
        if not cohorts:
            out.append(placeholder(key, title, ENDPOINT_COLUMNS, denominator, RUN_COMMAND.format(world=name)))
            continue
        rows, bars = [], []
        for c in cohorts:
            for r in summarise(c.cohort, world.endpoints):
                star = " *" if r.endpoint == world.primary else ""
                rows.append(
                    [
                        c.cohort.cohort_id,
                        c.implementation,
                        evidence_label(c.cohort.policy),
                        r.condition,
                        r.endpoint + star,
                        f"{r.successes}/{r.total}",
                        f"{r.rate:.1%}",
                        f"[{r.low:.1%}, {r.high:.1%}]",
                    ]
                )
                if star and r.condition != "pooled":
                    bars.append(Bar(f"{c.implementation}\n{r.condition}", r.rate, r.low, r.high))
        figure = Figure(f"{world.primary} rate (Wilson 95%)", bars) if bars else None
        simulated = any(c.simulation for c in cohorts)
        out.append(
            Table(key, title, ENDPOINT_COLUMNS, rows, denominator, _source(cohorts), simulated, figure=figure)
        )
    return out


CONTRAST_COLUMNS = [
    "world",
    "endpoint",
    "condition vs reference",
    "evidence",
    "implementations",
    "pairs",
    "reference rate",
    "condition rate",
    "difference",
    "McNemar (ref-only vs cond-only)",
    "95% CI (implementation-clustered bootstrap)",
]


def _pair_key(e: EpisodeResult) -> tuple[str, int, str]:
    return (e.spec.policy_digest, e.spec.seed, e.spec.identity.key)


def contrasts(ev: Evidence) -> list[Table]:
    """Each condition against the world's reference condition (its first canonical one), on the primary
    endpoint, over pairs with the same implementation, seed and identity, both assessed."""
    key, title = "world-contrasts", "World condition contrasts on the primary endpoint"
    denominator = (
        "pairs: the same implementation, seed and identity under the reference and the named condition, "
        "primary endpoint assessed in both; the bootstrap resamples implementations"
    )
    rows = []
    simulated, used = False, []
    for name in list_worlds():
        world = get_world(name)
        episodes = _episodes(ev, name)
        if not episodes:
            continue
        reference = world.canonical_conditions[0]
        by_condition: dict[str, dict[tuple[str, int, str], EpisodeResult]] = defaultdict(dict)
        for e in episodes:
            by_condition[e.spec.condition].setdefault(_pair_key(e), e)
        for condition in world.conditions:
            if condition == reference or condition not in by_condition:
                continue
            pairs = [
                (by_condition[reference][k], e)
                for k, e in by_condition[condition].items()
                if k in by_condition[reference]
                and e.outcome.endpoints.get(world.primary) is not None
                and by_condition[reference][k].outcome.endpoints.get(world.primary) is not None
            ]
            if not pairs:
                continue
            ref = [bool(a.outcome.endpoints[world.primary]) for a, _ in pairs]
            cond = [bool(b.outcome.endpoints[world.primary]) for _, b in pairs]
            impls = [implementation(a.spec.policy, a.spec.policy_digest) for a, _ in pairs]
            policies = sorted({a.spec.policy for a, _ in pairs})
            simulated |= any(p in SCRIPTED for p in policies)
            used += impls
            test = mcnemar_exact(ref, cond)
            if len(set(impls)) >= 2:
                ci = cluster_bootstrap_difference(
                    [float(x) for x in cond],
                    impls,
                    [float(x) for x in ref],
                    impls,
                    n_resamples=ev.n_resamples,
                )
                interval = f"[{ci.low:+.1%}, {ci.high:+.1%}]"
            else:
                interval = "n/a (one implementation)"
            rows.append(
                [
                    name,
                    world.primary,
                    f"{condition} vs {reference}",
                    "; ".join(sorted({evidence_label(p) for p in policies})),
                    str(len(set(impls))),
                    str(len(pairs)),
                    _rate_cell(sum(ref), len(ref)),
                    _rate_cell(sum(cond), len(cond)),
                    f"{(sum(cond) - sum(ref)) / len(pairs):+.1%}",
                    f"{test.b} vs {test.c}, p={test.p_value:.4f}",
                    interval,
                ]
            )
    if not rows:
        return [
            placeholder(
                key,
                title,
                CONTRAST_COLUMNS,
                denominator,
                "auditor world run C1 --episodes 20 (all canonical conditions)",
            )
        ]
    source = "policies " + ", ".join(sorted(set(used)))
    return [Table(key, title, CONTRAST_COLUMNS, rows, denominator, source, simulated)]


def _primary_counts(ev: Evidence) -> tuple[dict[str, dict[str, tuple[int, int]]], set[str]]:
    """World → implementation → (primary realised, assessed), pooled over conditions; and the scripted ones."""
    counts: dict[str, dict[str, tuple[int, int]]] = {}
    scripted = set()
    for name in list_worlds():
        primary = get_world(name).primary
        per: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for e in _episodes(ev, name):
            value = e.outcome.endpoints.get(primary)
            if value is None:
                continue
            impl = implementation(e.spec.policy, e.spec.policy_digest)
            if e.spec.policy in SCRIPTED:
                scripted.add(impl)
            per[impl][0] += bool(value)
            per[impl][1] += 1
        if per:
            counts[name] = {i: (k, n) for i, (k, n) in per.items()}
    return counts, scripted


def risk_matrix(ev: Evidence) -> list[Table]:
    """Implementation × risk: each world's primary-endpoint rate per implementation, and the rank
    correlations between worlds' implementation orderings with their noise floor."""
    counts, scripted = _primary_counts(ev)
    worlds = list(counts)
    impls = sorted({i for per in counts.values() for i in per})
    key, title = "world-matrix", "Implementation × risk matrix: primary-endpoint realisation"
    denominator = "episodes of the implementation in that world with the primary endpoint assessed, all conditions pooled"
    rank_key, rank_title = (
        "world-rank",
        "Rank correlation of implementation orderings between worlds, with noise floor",
    )
    rank_columns = [
        "worlds",
        "shared implementations",
        "Spearman ρ",
        "Kendall τ_b",
        "ρ median | q2.5% under a shared ordering",
        "τ_b median | q2.5%",
        "ρ below median",
        "ρ below q2.5%",
    ]
    rank_denominator = (
        f"implementations with primary-endpoint episodes in both worlds (at least {MIN_SHARED}); noise floor: "
        f"{ev.n_resamples} binomial resamples at each implementation's episode count"
    )
    if not counts:
        command = "auditor world run <WORLD> --policy llm --model <model>, for several models and worlds"
        return [
            placeholder(key, title, ["implementation", *list_worlds()], denominator, command),
            placeholder(rank_key, rank_title, rank_columns, rank_denominator, command),
        ]
    columns = ["implementation", "evidence", *worlds]
    rows = [
        [
            i,
            "simulation (scripted policy)" if i in scripted else "model measurement",
            *(_rate_cell(*counts[w][i]) if i in counts[w] else "not run" for w in worlds),
        ]
        for i in impls
    ]
    bubbles = [
        Bubble(i, w, counts[w][i][0] / counts[w][i][1]) for w in worlds for i in impls if i in counts[w]
    ]
    source = "policies " + ", ".join(impls)
    matrix = Table(
        key,
        title,
        columns,
        rows,
        denominator,
        source,
        bool(scripted),
        figure=Figure("primary-endpoint rate", bubbles=bubbles),
    )
    rank_rows = []
    for a, b in combinations(worlds, 2):
        shared = sorted(set(counts[a]) & set(counts[b]))
        if len(shared) < MIN_SHARED:
            continue
        try:
            floor = rank_noise_floor(
                [counts[a][i][0] for i in shared],
                [counts[a][i][1] for i in shared],
                [counts[b][i][0] for i in shared],
                [counts[b][i][1] for i in shared],
                n_resamples=ev.n_resamples,
            )
        except ValueError as exc:  # constant orderings: no correlation is defined
            rank_rows.append([f"{a} × {b}", str(len(shared)), f"undefined ({exc})", "", "", "", "", ""])
            continue
        rank_rows.append(
            [
                f"{a} × {b}",
                str(len(shared)),
                f"{floor.spearman:+.3f}",
                f"{floor.kendall:+.3f}",
                f"{floor.spearman_median:+.3f} | {floor.spearman_q025:+.3f}",
                f"{floor.kendall_median:+.3f} | {floor.kendall_q025:+.3f}",
                str(floor.below_median),
                str(floor.below_q025),
            ]
        )
    if rank_rows:
        rank = Table(rank_key, rank_title, rank_columns, rank_rows, rank_denominator, source, bool(scripted))
    else:
        most = max((len(set(counts[a]) & set(counts[b])) for a, b in combinations(worlds, 2)), default=0)
        rank = Table(
            rank_key,
            rank_title,
            rank_columns,
            [],
            rank_denominator,
            source,
            bool(scripted),
            empty=(
                f"no pair of worlds shares {MIN_SHARED} implementations in this store (at most {most}); produce "
                "them with `auditor world run <WORLD> --policy llm --model <model>` for several models"
            ),
        )
    return [matrix, rank]


def _by_implementation(ev: Evidence, world: str) -> dict[str, list[EpisodeResult]]:
    groups: dict[str, list[EpisodeResult]] = defaultdict(list)
    for e in _episodes(ev, world):
        groups[implementation(e.spec.policy, e.spec.policy_digest)].append(e)
    return dict(sorted(groups.items()))


def _world_table(
    ev: Evidence,
    world: str,
    key: str,
    title: str,
    columns: list[str],
    denominator: str,
    rows_of: Callable[[list[EpisodeResult]], list[list[str]]],
) -> Table:
    """A world-specific table: rows per implementation, each labelled simulation or measurement."""
    groups = _by_implementation(ev, world)
    full = ["implementation", "evidence", *columns]
    if not groups:
        return placeholder(key, title, full, denominator, RUN_COMMAND.format(world=world))
    rows = [
        [impl, evidence_label(eps[0].spec.policy), *r] for impl, eps in groups.items() for r in rows_of(eps)
    ]
    simulated = any(eps[0].spec.policy in SCRIPTED for eps in groups.values())
    source = "policies " + ", ".join(f"{i} ({evidence_label(e[0].spec.policy)})" for i, e in groups.items())
    return Table(key, title, full, rows, denominator, source, simulated)


def _drift_rows(episodes: list[EpisodeResult]) -> list[list[str]]:
    rows = []
    for hop in C1_HOPS:
        cells = []
        for axis in ("decision_drift", "submission_drift"):
            values = [e.outcome.measures.get(axis, {}).get(hop) for e in episodes]
            assessed = [v for v in values if v is not None]
            cells.append(_rate_cell(sum(bool(v) for v in assessed), len(assessed)))
        rows.append([hop, *cells])
    return rows


def _stage_rows(episodes: list[EpisodeResult]) -> list[list[str]]:
    signal = [e for e in episodes if e.outcome.endpoints.get("drift_signal")]
    stages = Counter(
        e.outcome.measures.get("interception_stage") or "not intercepted (terminal drift)" for e in signal
    )
    return [[stage, _rate_cell(n, len(signal))] for stage, n in stages.most_common()]


def c1(ev: Evidence) -> list[Table]:
    """C1: drift per hop and status axis (the handoff matrix), and where drift signals were intercepted."""
    return [
        _world_table(
            ev,
            "C1",
            "c1-handoff-matrix",
            "C1 handoff matrix: decision- and submission-status drift per hop",
            ["hop", "decision drift", "submission drift"],
            "episodes whose hop was produced and assessed on that axis",
            _drift_rows,
        ),
        _world_table(
            ev,
            "C1",
            "c1-interception",
            "C1 interception stages of drift signals",
            ["stage", "episodes / episodes with a drift signal"],
            "episodes with a drift signal at some hop",
            _stage_rows,
        ),
    ]


def _atlas_rows(episodes: list[EpisodeResult]) -> list[list[str]]:
    from worlds.d1.state import FIELDS

    rows = []
    for domain, fields in FIELDS.items():
        eps = [e for e in episodes if e.spec.identity.fields.get("domain") == domain]
        for field in fields:
            final = sum(field in e.outcome.measures.get("fields_final", []) for e in eps)
            spec = sum(field in e.outcome.measures.get("fields_specialist", []) for e in eps)
            rows.append([domain, field, _rate_cell(final, len(eps)), _rate_cell(spec, len(eps))])
    return rows


def d1(ev: Evidence) -> list[Table]:
    """D1: each protected field's disclosure at the requester and at the specialist (the field atlas)."""
    return [
        _world_table(
            ev,
            "D1",
            "d1-field-atlas",
            "D1 protected-field atlas: disclosure per field (structured field judge, positive at score ≥ 2)",
            ["domain", "field", "at the requester", "by the specialist"],
            "episodes of that domain; an episode may disclose several fields",
            _atlas_rows,
        )
    ]


def _cascade_rows(episodes: list[EpisodeResult]) -> list[list[str]]:
    depths = Counter(e.outcome.measures.get("cascade_depth") for e in episodes)
    return [[label, _rate_cell(depths.get(d, 0), len(episodes))] for d, label in F1_DEPTHS.items()]


def f1(ev: Evidence) -> list[Table]:
    """F1: the exact-count partition of episodes by cascade depth."""
    return [
        _world_table(
            ev,
            "F1",
            "f1-cascade",
            "F1 cascade partition by depth",
            ["depth", "episodes / valid episodes"],
            "valid episodes of the implementation (the four depths partition them)",
            _cascade_rows,
        )
    ]

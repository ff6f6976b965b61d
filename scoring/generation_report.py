"""The one-run generation summary as tables: accuracy, discordance, contrast, competitors, flips, rescue.

With a coalition run of the same dataset and model beside it, the rescue-prediction study is a
seventh table. A degradation run has its own two tables (``degradation_tables``), and so does a
guardrail run (``guardrail_tables``).

Each rate cell reads ``k/n rate [95% Wilson interval]`` so its denominator is always on the page;
an empty cohort reads ``n/a`` rather than a zero. The same rows go to one CSV per table.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from scoring.action_stats import GenerationSummary
from scoring.consequence import FreeGeneration, SelectorConsequence
from scoring.degradation_prediction import DegradationPrediction
from scoring.degradation_stats import DegradationSummary
from scoring.guardrail_stats import GuardrailSummary
from scoring.rescue_prediction import RescuePrediction
from scoring.stats import BootstrapInterval, McNemarResult, Rate

NA = "n/a"


@dataclass(frozen=True)
class Table:
    name: str
    title: str
    columns: list[str]
    rows: list[list[str]]


def fmt_rate(r: Rate | None) -> str:
    return NA if r is None else f"{r.successes}/{r.total} {r.value:.1%} [{r.low:.1%}, {r.high:.1%}]"


def fmt_mcnemar(m: McNemarResult | None) -> str:
    return NA if m is None else f"{m.b} vs {m.c}, p={m.p_value:.4f}"


def fmt_score(x: float | None) -> str:
    return NA if x is None else f"{x:.3f}"


def fmt_interval(i: BootstrapInterval | None) -> str:
    return NA if i is None else f"[{i.low:+.1%}, {i.high:+.1%}]"


def fmt_share(x: float | None) -> str:
    return NA if x is None else f"{x:+.1%}"


def generation_tables(s: GenerationSummary) -> list[Table]:
    """The six tables, in reading order."""
    return [
        Table(
            "accuracy",
            "correct and malformed generations per context (denominator: generations)",
            ["condition", "cell", "generations", "correct", "malformed"],
            [[a.condition, a.cell, str(a.n), fmt_rate(a.correct), fmt_rate(a.malformed)] for a in s.accuracy],
        ),
        Table(
            "discordance",
            "trusted vs untrusted within relation (denominator: targets with both; McNemar: T-only vs U-only correct)",
            [
                "relation",
                "cell",
                "pairs",
                "discordant",
                "correct→wrong (T→U)",
                "wrong→correct (T→U)",
                "McNemar",
            ],
            [
                [
                    c.relation,
                    c.cell,
                    str(c.n_pairs),
                    fmt_rate(c.discordant),
                    fmt_rate(c.correct_to_wrong),
                    fmt_rate(c.wrong_to_correct),
                    fmt_mcnemar(c.mcnemar),
                ]
                for c in s.changes
            ],
        ),
        Table(
            "contrast",
            "competition − support discordance (denominator: targets with all four; CI: source-task bootstrap)",
            ["cell", "targets", "competition", "support", "difference", "95% CI", "McNemar"],
            [
                [
                    c.cell,
                    str(c.n_targets),
                    fmt_rate(c.competition),
                    fmt_rate(c.support),
                    NA if c.difference is None else f"{c.difference:+.1%}",
                    fmt_interval(c.interval),
                    fmt_mcnemar(c.mcnemar),
                ]
                for c in s.contrast
            ],
        ),
        Table(
            "competitor",
            "incorrect generations equal to the presented competitor (denominator: incorrect generations)",
            ["condition", "cell", "incorrect", "competitor"],
            [[c.condition, c.cell, str(c.n_incorrect), fmt_rate(c.matched)] for c in s.competitors],
        ),
        Table(
            "flip",
            "authority flip, original (U) vs trusted rewrite (T) (denominator: targets; T comp.: T misses)",
            ["cell", "targets", "U miss", "T miss", "U→T switch", "T comp.", "McNemar"],
            [
                [
                    f.cell,
                    str(f.n_targets),
                    fmt_rate(f.u_miss),
                    fmt_rate(f.t_miss),
                    fmt_rate(f.u_to_t_switch),
                    fmt_rate(f.t_competitor),
                    fmt_mcnemar(f.mcnemar),
                ]
                for f in s.flips
            ],
        ),
        Table(
            "rescue",
            "base errors made correct by a treatment (denominators: all targets of the arm; base errors)",
            [
                "arm",
                "base → treatment",
                "cell",
                "targets",
                "base errors",
                "rescued / targets",
                "rescued / base errors",
            ],
            [
                [
                    r.arm,
                    f"{r.base} → {r.treatment}",
                    r.cell,
                    str(r.n_targets),
                    fmt_rate(r.base_errors),
                    fmt_rate(r.rescued),
                    fmt_rate(r.rescued_of_errors),
                ]
                for r in s.rescues
            ],
        ),
    ]


def degradation_tables(s: DegradationSummary) -> list[Table]:
    """The per-cell endpoints, then the retained-invalid rows themselves."""
    return [
        Table(
            "degradation",
            "valid-evidence degradation (denominator: target-valid rows with full, mixed and clean; "
            "McNemar: mixed-only vs clean-only correct)",
            [
                "cell",
                "rows",
                "targets",
                "c_F",
                "c_M",
                "c_C",
                "mixed≠clean",
                "McNemar",
                "retained-invalid (1,0,1)",
            ],
            [
                [
                    c.cell,
                    str(c.n_rows),
                    str(c.n_targets),
                    fmt_rate(c.c_full),
                    fmt_rate(c.c_mixed),
                    fmt_rate(c.c_clean),
                    fmt_rate(c.discordant),
                    fmt_mcnemar(c.mcnemar),
                    fmt_rate(c.retained_invalid),
                ]
                for c in s.cells
            ],
        ),
        Table(
            "retained_invalid",
            "rows with the retained-invalid pattern: correct in full and clean, wrong in mixed",
            ["target", "kind", "valid factor", "full", "mixed", "clean"],
            [
                [
                    r.full.target_key,
                    r.full.kind,
                    r.factor_id,
                    *(str(g.value) for g in (r.full, r.mixed, r.clean)),
                ]
                for r in s.retained
            ],
        ),
    ]


def guardrail_tables(s: GuardrailSummary) -> list[Table]:
    """Errors per instruction variant, then the policy − plain change per endpoint."""
    cohort = "denominator: targets with T_C and U_C under both variants"
    return [
        Table(
            "guardrail_errors",
            f"competition errors per instruction variant ({cohort}; sensitivity = U_C − T_C error, "
            "interval by source task; McNemar: T-only vs U-only correct)",
            [
                "variant",
                "cell",
                "targets",
                "base error",
                "T_C error",
                "U_C error",
                "sensitivity",
                "95% CI",
                "McNemar",
            ],
            [
                [
                    v.variant,
                    v.cell,
                    str(v.n_targets),
                    fmt_rate(v.base_error),
                    fmt_rate(v.trusted_error),
                    fmt_rate(v.untrusted_error),
                    fmt_share(v.sensitivity),
                    fmt_interval(v.interval),
                    fmt_mcnemar(v.mcnemar),
                ]
                for v in s.variants
            ],
        ),
        Table(
            "guardrail_change",
            f"policy − plain ({cohort}; interval by source task; McNemar: plain-only vs policy-only correct)",
            ["endpoint", "cell", "targets", "plain", "policy", "policy − plain", "95% CI", "McNemar"],
            [
                [
                    c.endpoint,
                    c.cell,
                    str(c.n_targets),
                    fmt_share(c.plain),
                    fmt_share(c.policy),
                    fmt_share(c.difference),
                    fmt_interval(c.interval),
                    fmt_mcnemar(c.mcnemar),
                ]
                for c in s.changes
            ],
        ),
    ]


def prediction_table(predictions: list[RescuePrediction]) -> Table:
    """The §13.3 study: one row per feature set, on the shared cohort."""
    return Table(
        "rescue_prediction",
        "untrusted-note rescue of base errors predicted from a coalition run "
        "(cohort: base-error targets with an Invalid factor; 5-fold GroupKFold by source task)",
        ["features", "targets", "tasks", "rescued", "AUROC", "AP"],
        [
            [
                p.features,
                str(p.n_targets),
                str(p.n_tasks),
                fmt_rate(p.rescued),
                fmt_score(p.auroc),
                fmt_score(p.ap),
            ]
            for p in predictions
        ],
    )


def degradation_prediction_tables(p: DegradationPrediction) -> list[Table]:
    """§4.4: single predictors with decile rates, then the held-out models (same rows throughout)."""
    single = Table(
        "degradation_predictors",
        f"degradation endpoints predicted from a coalition run ({p.n_rows} target-valid rows of "
        "targets with an Invalid factor; AUROC with source-task cluster-bootstrap 95% intervals)",
        [
            "predictor",
            "endpoint",
            "rows",
            "tasks",
            "positives",
            "AUROC",
            "top decile",
            "bottom decile",
            "gap",
        ],
        [
            [
                d.predictor,
                d.endpoint.replace("_", "-"),
                str(d.n_rows),
                str(d.n_tasks),
                fmt_rate(d.positives),
                fmt_interval(d.auroc),
                fmt_rate(d.top_decile),
                fmt_rate(d.bottom_decile),
                NA if d.decile_gap is None else f"{d.decile_gap:+.1%}",
            ]
            for d in p.single
        ],
    )
    held_out = Table(
        "degradation_held_out",
        "mixed–clean action change, 5-fold GroupKFold by source task (logistic regression; "
        "AUROC of pooled out-of-fold predictions, paired source-task intervals)",
        ["model", "AUROC"],
        [
            ["absolute score effect", fmt_interval(p.effect_model)],
            ["effect + aligned Shapley share", fmt_interval(p.combined_model)],
            ["increment", fmt_interval(p.increment)],
        ],
    )
    return [single, held_out]


def perturbation_tables(flips: list[tuple[str, Rate | None]]) -> list[Table]:
    """A perturbation run alone: how often removing the Invalid factors changes the action."""
    return [
        Table(
            "perturbation_flips",
            "action changes when the target's Invalid factors are removed (denominator: targets with an "
            "Invalid factor decoded in full and no-invalid contexts)",
            ["cell", "flipped"],
            [[cell, fmt_rate(r)] for cell, r in flips],
        )
    ]


def consequence_tables(selectors: list[SelectorConsequence], free: list[FreeGeneration]) -> list[Table]:
    """The perturbation consequence check per selector, then the free-generation sanity check."""
    fmt = lambda x: NA if x is None else f"{x:+.3f}"  # noqa: E731
    return [
        Table(
            "perturbation_consequence",
            "perturbation consequence: targets above each selector's median invalid share (high) vs the "
            "rest (low); |Δ| = score shift from removing the Invalid factors, flips = action changes "
            "(denominator: targets with an Invalid factor and a finite share)",
            [
                "selector",
                "high",
                "low",
                "|Δ| high",
                "|Δ| low",
                "|Δ| high − low",
                "flips high",
                "flips low",
                "flips high − low",
            ],
            [
                [
                    c.selector,
                    str(c.n_high),
                    str(c.n_low),
                    fmt(c.shift_high),
                    fmt(c.shift_low),
                    fmt(c.shift_difference),
                    fmt_rate(c.flips_high),
                    fmt_rate(c.flips_low),
                    NA if c.flip_difference is None else f"{c.flip_difference:+.1%}",
                ]
                for c in selectors
            ],
        ),
        Table(
            "free_generation",
            "free-generation sanity check: top and bottom tasks by maximum slot invalid share (order-three), "
            "full-context actions (denominators: tasks decoded; tool targets; parsed slot targets)",
            ["dataset", "group", "tasks", "parse accuracy", "tool accuracy", "slot accuracy"],
            [
                [f.dataset, f.group, str(f.n_tasks), fmt_rate(f.parsed), fmt_rate(f.tool), fmt_rate(f.slot)]
                for f in free
            ],
        ),
    ]


def write_csvs(tables: list[Table], folder: Path, run_id: str) -> list[Path]:
    """One CSV per table, ``<run>-<table>.csv``."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for table in tables:
        path = folder / f"{run_id}-{table.name}.csv"
        with path.open("w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(table.columns)
            writer.writerows(table.rows)
        paths.append(path)
    return paths

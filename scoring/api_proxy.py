"""The API-served log-probability proxy (seed §15.13): a black-box check, not the audit.

Closed APIs that expose first-token top-logprobs, but not teacher-forced target-token scores, cannot
run the exact subset-interaction audit. For them, the model is asked through the litellm gateway
whether the proposed target is supported, once with the full context and once with the target's
Invalid factors removed, under three yes/no prompt variants; the score is the first generated
token's log P(yes) − log P(no), and the per-target proxy gap is full − no-invalid. Where "yes" or
"no" is not among the returned top-logprobs, the outcome is recorded as unassessed, never as a zero.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from auditor.core.errors import AuditorError, InputError
from auditor.core.llm import ModelCallError, configure
from schemas.attribution import AttributionLabel, AttributionTask, Target, TargetKind
from schemas.events import NewEvent
from scoring.prompts import CONTEXT_HEADER, factor_line, interface_text
from scoring.runs import PROXY_SCORED, read_config, run_stream
from scoring.stats import BootstrapInterval, cluster_bootstrap_mean

NOT_TEACHER_FORCED = (
    "API proxy: first-token forced-choice log P(yes) − log P(no), full vs no-invalid context. "
    "This is NOT the teacher-forced target-token audit: no subset scores, no interactions, no "
    "invalid shares — a weaker black-box signal for endpoints that expose only generated-token logprobs."
)
MODEL_PREFIX = "litellm/"
TOP_LOGPROBS = 20  # the most OpenAI-compatible endpoints return
CONTEXTS = ("full", "no_invalid")
# The three yes/no variants; {what} names the proposed target.
VARIANTS: dict[str, str] = {
    "standard": "Is the proposed {what} supported by the task context? Answer yes or no.",
    "terse": "Supported? yes/no",
    "authorized": "Does the task context authorize the proposed {what}? Reply with one word: yes or no.",
}
OK, UNASSESSED, NO_INVALID = "ok", "unassessed", "no-invalid"


class LogprobsUnavailable(AuditorError):
    """The endpoint answered without first-token logprobs: the proxy cannot run on it at all."""


def gateway_model(model: str) -> str:
    """``litellm/<name>`` → the litellm model name; anything else is the user's one-line mistake."""
    name = model.removeprefix(MODEL_PREFIX)
    if not model.startswith(MODEL_PREFIX) or not name:
        raise InputError(
            f"the api-proxy experiment needs a gateway model, not {model!r}",
            field="model",
            hint="give litellm/<litellm model name>, e.g. litellm/openai/gpt-4o-mini",
        )
    return name


def proxy_config(model: str) -> dict[str, Any]:
    """What an api-proxy run records beside the common run configuration."""
    return {
        "device": "gateway",  # the model runs behind litellm; no local device or dtype applies
        "dtype": None,
        "gateway_model": gateway_model(model),
        "method": NOT_TEACHER_FORCED,
        "variants": VARIANTS,
        "contexts": list(CONTEXTS),
        "top_logprobs": TOP_LOGPROBS,
        "decoding": "temperature 0, one token",
    }


def proposed(task: AttributionTask, target: Target) -> str:
    if target.kind is TargetKind.tool:
        return f"next tool {target.value}"
    return f"value {target.value!r} for argument {target.slot!r} of {task.reference_action.tool}"


def invalid_ids(target: Target) -> list[str]:
    return [j.factor_id for j in target.judgments if j.label is AttributionLabel.invalid]


def messages(task: AttributionTask, target: Target, context: str, variant: str) -> list[dict[str, str]]:
    """System: the fixed interface. User: the context (all factors, or all but the Invalid ones),
    the proposed target and the variant's yes/no question."""
    drop = set(invalid_ids(target)) if context == "no_invalid" else set()
    lines = "".join(factor_line(f.text) for f in task.factors if f.factor_id not in drop)
    what = proposed(task, target)
    question = VARIANTS[variant].format(what=what)
    user = f"{CONTEXT_HEADER}{lines}\nProposed {what}.\n{question}"
    return [{"role": "system", "content": interface_text(task).rstrip()}, {"role": "user", "content": user}]


@dataclass(frozen=True)
class YesNo:
    """One request's first-token outcome: its log-odds of yes over no, or why it has none."""

    status: str
    first_token: str
    logodds: float | None
    log_p_yes: float | None
    log_p_no: float | None
    reason: str | None = None


def _logsumexp(values: Sequence[float]) -> float:
    top = max(values)
    return top + math.log(sum(math.exp(v - top) for v in values))


def yes_no(first_token: str, top: Sequence[tuple[str, float]]) -> YesNo:
    """log P(yes) − log P(no) from the first token's top-logprobs.

    Case and surrounding space do not matter (" Yes", "yes", "YES" are all yes); several spellings
    of one answer add their probabilities. A missing answer makes the outcome unassessed.
    """
    found: dict[str, list[float]] = {"yes": [], "no": []}
    for token, logprob in top:
        word = token.strip().lower()
        if word in found:
            found[word].append(logprob)
    missing = [w for w, lps in found.items() if not lps]
    if missing:
        reason = f"{' and '.join(repr(w) for w in missing)} not among the {len(top)} first-token top-logprobs"
        return YesNo(UNASSESSED, first_token, None, None, None, reason)
    lp_yes, lp_no = _logsumexp(found["yes"]), _logsumexp(found["no"])
    return YesNo(OK, first_token, lp_yes - lp_no, lp_yes, lp_no)


def first_token_logprobs(model: str, chat: list[dict[str, str]], top: int = TOP_LOGPROBS) -> YesNo:
    """One gateway call for one token with its top-logprobs, read as a yes/no outcome."""
    litellm = configure()
    try:
        response = litellm.completion(
            model=model,
            messages=chat,
            max_tokens=1,
            temperature=0.0,
            logprobs=True,
            top_logprobs=top,
            timeout=120.0,
            num_retries=2,
        )
    except Exception as exc:  # litellm raises provider-specific classes; one clear line for the user
        raise ModelCallError(f"model call to {model} failed: {type(exc).__name__}: {str(exc)[:300]}") from exc
    logprobs = getattr(response.choices[0], "logprobs", None)
    content = getattr(logprobs, "content", None) if logprobs is not None else None
    if not content:
        raise LogprobsUnavailable(
            f"{model} answered without first-token logprobs",
            hint="the api-proxy experiment needs an endpoint that returns logprobs/top_logprobs",
        )
    first = content[0]
    return yes_no(first.token, [(t.token, float(t.logprob)) for t in first.top_logprobs or []])


Ask = Callable[[list[dict[str, str]]], YesNo]


def proxy_event(run_id: str, task: AttributionTask, target: Target, ask: Ask) -> NewEvent:
    """Every variant in both contexts for one target; a target without Invalid factors has no
    no-invalid contrast and is recorded as such without a model call."""
    removed = invalid_ids(target)
    variants: dict[str, Any] = {}
    if removed:
        for variant in VARIANTS:
            outcomes = {c: ask(messages(task, target, c, variant)) for c in CONTEXTS}
            full, clean = outcomes["full"].logodds, outcomes["no_invalid"].logodds
            variants[variant] = {
                **{c: o.__dict__ for c, o in outcomes.items()},
                "gap": None if full is None or clean is None else round(full - clean, 6),
            }
    key = task.target_key(target)
    payload = {
        "key": key,
        "task_id": task.task_id,
        "target_id": target.target_id,
        "kind": target.kind.value,
        "setting": task.setting,
        "removed": removed,
        "status": OK if removed else NO_INVALID,
        "n_requests": len(variants) * len(CONTEXTS),
        "variants": variants,
    }
    return NewEvent(type=PROXY_SCORED, payload=payload, idempotency_key=f"{run_stream(run_id)}/{key}")


@dataclass(frozen=True)
class ProxyTarget:
    """A ``ProxyScored`` event read back."""

    task_id: str
    target_id: str
    kind: str
    status: str
    removed: list[str]
    n_requests: int
    variants: dict[str, dict[str, Any]]


def read_proxy(store: Any, run_id: str) -> tuple[dict[str, Any], list[ProxyTarget]]:
    fields = ProxyTarget.__dataclass_fields__
    rows = [
        ProxyTarget(**{k: e.payload[k] for k in fields})
        for e in store.read_stream(run_stream(run_id))
        if e.type == PROXY_SCORED
    ]
    return read_config(store, run_id), rows


@dataclass(frozen=True)
class ProxySummary:
    """One dataset × target kind × variant cell: mean |gap| and mean signed gap over complete targets."""

    dataset: str
    cell: str
    variant: str
    n_targets: int
    n_complete: int
    n_unassessed: int
    abs_gap: BootstrapInterval | float | None
    gap: BootstrapInterval | float | None


def _mean(values: list[float], tasks: list[str], n_resamples: int) -> BootstrapInterval | float | None:
    """Cluster-bootstrap over source tasks where there are two or more; a bare mean otherwise."""
    if not values:
        return None
    if len(set(tasks)) < 2:
        return sum(values) / len(values)
    return cluster_bootstrap_mean(values, tasks, n_resamples=n_resamples)


def summarise_proxy(
    dataset: str, rows: Sequence[ProxyTarget], n_resamples: int = 20_000
) -> tuple[list[ProxySummary], int]:
    """Per target kind and variant; returns the cells and how many targets had no Invalid factor."""
    with_invalid = [r for r in rows if r.status == OK]
    out = []
    for cell in ("all", "tool", "slot"):
        members = [r for r in with_invalid if cell in ("all", r.kind)]
        if not members:
            continue
        for variant in VARIANTS:
            done = [r for r in members if r.variants[variant]["gap"] is not None]
            gaps = [float(r.variants[variant]["gap"]) for r in done]
            tasks = [r.task_id for r in done]
            out.append(
                ProxySummary(
                    dataset,
                    cell,
                    variant,
                    len(members),
                    len(done),
                    len(members) - len(done),
                    _mean([abs(g) for g in gaps], tasks, n_resamples),
                    _mean(gaps, tasks, n_resamples),
                )
            )
    return out, len(rows) - len(with_invalid)


COLUMNS = [
    "dataset",
    "cell",
    "variant",
    "targets",
    "complete",
    "unassessed",
    "mean |Δ| [95% CI]",
    "mean Δ [95% CI]",
]


def _fmt(value: BootstrapInterval | float | None) -> str:
    if value is None:
        return "n/a (no complete row)"
    if isinstance(value, BootstrapInterval):
        return f"{value.estimate:.3f} [{value.low:.3f}, {value.high:.3f}]"
    return f"{value:.3f} (1 task: no interval)"


def table_rows(cells: Sequence[ProxySummary]) -> list[list[str]]:
    return [
        [
            c.dataset,
            c.cell,
            c.variant,
            str(c.n_targets),
            str(c.n_complete),
            str(c.n_unassessed),
            _fmt(c.abs_gap),
            _fmt(c.gap),
        ]
        for c in cells
    ]


def write_csv(table: Sequence[Sequence[str]], path: Path) -> None:
    """The summary table, with the method statement as its first line so it travels with the figures."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        fh.write(f"# {NOT_TEACHER_FORCED}\n")
        writer = csv.writer(fh)
        writer.writerow(COLUMNS)
        writer.writerows(table)

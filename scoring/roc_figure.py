"""The ROC curve of ``risk_score`` against recorded outcomes: where on the ranking failed runs are
told from succeeded ones (the flagged runs at the left, the ties of unflagged runs as the diagonal
run at the right), which one AUROC figure hides.

matplotlib is the optional ``draw`` extra, imported here only; the Agg canvas is used directly, so
no display and no pyplot state are involved. The image is written whole or not at all.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from auditor.core.errors import InputError
from scoring.stats.auroc import auroc, roc_points

FORMATS = ("png", "svg", "pdf")


@dataclass(frozen=True)
class Curve:
    """One part's scores: the failed runs' (``positive``), the succeeded runs' and the AUROC's
    95% interval, if there is one."""

    name: str
    positive: Sequence[float]
    negative: Sequence[float]
    interval: tuple[float, float] | None = None


def check_target(path: Path, option: str = "--plot") -> None:
    """Refuse a figure that cannot be written before any work is done for it."""
    if path.suffix.lower().lstrip(".") not in FORMATS:
        raise InputError(f"name a .png, .svg or .pdf file, not '{path.name}'", field=option)
    if not path.parent.is_dir():
        raise InputError("no such folder for the figure", path=str(path.parent), field=option)
    if importlib.util.find_spec("matplotlib") is None:
        raise InputError("drawing needs matplotlib", field=option, hint="pip install 'agent-auditor[draw]'")


def write_roc(curves: Sequence[Curve], path: Path, title: str) -> None:
    """Each curve with its AUROC and interval in the legend, beside the chance diagonal; a curve
    without both failed and succeeded runs is left out (it has no ROC)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5, 5))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=0.8, label="chance")
    for curve in curves:
        if not curve.positive or not curve.negative:
            continue
        xs, ys = zip(*roc_points(curve.positive, curve.negative), strict=True)
        runs = len(curve.positive) + len(curve.negative)
        value = f"{auroc(curve.positive, curve.negative):.3f}"
        if curve.interval is not None:
            value += f" [{curve.interval[0]:.3f}–{curve.interval[1]:.3f}]"
        ax.plot(xs, ys, marker="o", markersize=3, label=f"{curve.name} ({runs} runs): {value}")
    ax.set(
        xlabel="share of succeeded runs at or above a risk_score",
        ylabel="share of failed runs at or above it",
        xlim=(0, 1),
        ylim=(0, 1.02),
        title=title,
    )
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    partial = path.with_name(path.name + ".partial")
    fig.savefig(partial, format=path.suffix.lower().lstrip("."), dpi=120)
    partial.replace(path)

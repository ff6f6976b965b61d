"""The swimlane drawing renders real images, windows long traces and highlights cited edges."""

from __future__ import annotations

from pathlib import Path

import pytest

from graph import GraphQueryError, InteractionGraph, build_graph
from graph.draw import draw_swimlane
from tests.graph_fixtures import invoice_trace, make_trace


@pytest.fixture(scope="module")
def invoice() -> InteractionGraph:
    g = build_graph(invoice_trace(), "topology")
    assert g is not None
    return g


def test_png_and_svg_render_with_highlights(invoice: InteractionGraph, tmp_path: Path) -> None:
    info = draw_swimlane(invoice, tmp_path / "g.png", highlight=["s1", "e:s3:0"])
    data = (tmp_path / "g.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    assert info.highlighted == 2 and info.edges == 7
    assert info.lanes[-2:] == ["unknown", "final_output"] and info.lanes[0] == "finance_analyst"
    draw_swimlane(invoice, tmp_path / "g.svg")
    svg = (tmp_path / "g.svg").read_text()
    assert "<svg" in svg and "controller" in svg
    assert not list(tmp_path.glob("*.tmp"))


def test_long_traces_are_windowed(tmp_path: Path) -> None:
    steps = [
        {"actor": f"a{i % 7}", "recipients": [f"a{(i + 1) % 7}"], "content": f"m{i}"} for i in range(700)
    ]
    g = build_graph(make_trace("long", steps), "topology")
    assert g is not None
    first = draw_swimlane(g, tmp_path / "first.png")
    assert (first.first_step, first.last_step, first.total_steps) == (0, 499, 700)
    window = draw_swimlane(g, tmp_path / "window.png", steps=(650, 10_000), highlight=["s690"])
    assert (window.first_step, window.last_step, window.highlighted) == (650, 699, 1)


def test_bad_requests_are_refused_before_anything_is_written(
    invoice: InteractionGraph, tmp_path: Path
) -> None:
    with pytest.raises(ValueError, match=r"use a \.svg or \.png"):
        draw_swimlane(invoice, tmp_path / "g.jpg")
    with pytest.raises(GraphQueryError, match="neither a step id nor an edge ref"):
        draw_swimlane(invoice, tmp_path / "g.png", highlight=["s99"])
    with pytest.raises(ValueError, match="empty step window"):
        draw_swimlane(invoice, tmp_path / "g.png", steps=(5, 5))
    assert not list(tmp_path.iterdir())

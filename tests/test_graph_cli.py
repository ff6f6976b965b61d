"""`auditor graph ...` as a user runs it: build records a GraphBuilt event once, exports parse,
drawings render, mistakes are one clear line."""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import pytest

from graph import graph_digest_of_node_link
from tests.cli_helpers import events_in, run
from tests.conftest import REPO

EXAMPLE = REPO / "examples" / "renewal_drift.jsonl"
TRACE = "example-renewal-drift"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("graph-cli")
    assert run(["ingest", str(EXAMPLE)], path).returncode == 0
    return path


def test_build_records_graph_built_once_and_exports_match_it(workdir: Path) -> None:
    before = events_in(workdir)
    first = run(["graph", "build", TRACE, "--json"], workdir)
    assert first.returncode == 0, first.stderr
    built = json.loads(first.stdout)
    assert built["stream"] == f"graph-{TRACE}" and built["digest"].startswith("sha256:")
    again = json.loads(run(["graph", "build", TRACE, "--json"], workdir).stdout)
    assert again == built  # the same graph again: nothing new appended
    assert events_in(workdir) == before + 1

    assert run(["graph", "export", TRACE, "--format", "json", "-o", "g.json"], workdir).returncode == 0
    data = json.loads((workdir / "g.json").read_text())
    assert graph_digest_of_node_link(data) == built["digest"]
    assert data["annotations"]["values"] and len(data["links"]) == built["edges"]
    assert run(["graph", "export", TRACE, "--format", "graphml", "-o", "g.graphml"], workdir).returncode == 0
    g = nx.read_graphml(workdir / "g.graphml", force_multigraph=True)
    assert g.number_of_edges() == built["edges"] and g.graph["digest"] == built["digest"]


def test_draw_renders_images_with_highlights(workdir: Path) -> None:
    # s03 is a handoff to two recipients (two edges), e:s05:0 one more edge
    png = run(
        ["graph", "draw", TRACE, "-o", "d.png", "--highlight", "s03", "--highlight", "e:s05:0"], workdir
    )
    assert png.returncode == 0, png.stderr
    assert "3 highlighted" in png.stdout
    assert (workdir / "d.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = run(["graph", "draw", TRACE, "-o", "d.svg", "--steps", "2:6"], workdir)
    assert svg.returncode == 0 and "steps 2-5 of 8" in svg.stdout
    assert b"<svg" in (workdir / "d.svg").read_bytes()[:2000]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["graph", "show", "nope"], "no trace with id 'nope'"),
        (["graph", "draw", TRACE, "-o", "bad.gif"], "use a .svg or .png file name"),
        (["graph", "draw", TRACE, "-o", "bad.png", "--highlight", "s99"], "highlight 's99' is neither"),
    ],
)
def test_mistakes_are_one_clear_line(workdir: Path, args: list[str], message: str) -> None:
    proc = run(args, workdir)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr
    assert not list(workdir.glob("bad.*"))  # nothing half-written

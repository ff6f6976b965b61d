"""A command that needs an optional extra the installation lacks says which one to install, in
one line, instead of a ModuleNotFoundError traceback; the map of modules to extras is checked
against pyproject.toml, so an extra's new dependency cannot be left out of it."""

from __future__ import annotations

import importlib.metadata
import re
import sys
import tomllib

import pytest

from auditor.surfaces.cli.extras import EXTRA_OF, missing_extra
from tests.cli_helpers import run
from tests.conftest import REPO

RUNTIME = ("draw", "scoring", "agent", "stream", "server")  # the extras commands import from


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\s<>=!~\[;]", r, maxsplit=1)[0].lower().replace("_", "-") for r in requirements}


@pytest.fixture(scope="module")
def project() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def test_every_module_in_the_map_comes_with_its_extra(project):
    provides = importlib.metadata.packages_distributions()
    for module, extra in EXTRA_OF.items():
        wanted = _names(project["optional-dependencies"][extra])
        given = {d.lower().replace("_", "-") for d in provides.get(module, [])}
        assert given & wanted, f"{module}: from {sorted(given)}, none of which the '{extra}' extra lists"


def test_every_dependency_of_a_runtime_extra_is_in_the_map(project):
    base = _names(project["dependencies"])
    provides = importlib.metadata.packages_distributions()
    for extra in RUNTIME:
        for dist in _names(project["optional-dependencies"][extra]) - base - {"agent-auditor"}:
            modules = {m for m, ds in provides.items() if dist in {d.lower().replace("_", "-") for d in ds}}
            assert modules & set(EXTRA_OF), (
                f"the '{extra}' extra's {dist} ({sorted(modules)}) is not in EXTRA_OF"
            )


def test_a_missing_module_of_an_extra_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "langgraph", None)  # as if the agent extra were not installed
    for name in [m for m in sys.modules if m.startswith("langgraph.")]:
        monkeypatch.setitem(sys.modules, name, None)
    proc = run(["review", str(REPO / "examples" / "renewal_drift.jsonl"), "--engine", "agent"], tmp_path)
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0, proc.stderr  # one line
    assert "needs the 'agent' extra (langgraph is not installed)" in proc.stderr
    assert "pip install 'agent-auditor[agent]'" in proc.stderr and "Traceback" not in proc.stderr


def test_any_other_missing_module_is_not_hidden():
    assert missing_extra(ModuleNotFoundError("No module named 'auditor.nope'", name="auditor.nope")) is None
    line = missing_extra(ModuleNotFoundError("No module named 'torch._C'", name="torch._C"))
    assert line is not None and "'scoring' extra (torch is not installed)" in line

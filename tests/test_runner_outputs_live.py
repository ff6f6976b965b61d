"""pytest and unittest run for real, under the flags agents pass them, and their output read by
``parse_output``: the counts it reads are the counts the runner's own JUnit XML (pytest) or its
result object (unittest) records. The frozen outputs elsewhere pin versions; this checks the
reading against whatever runner versions are installed."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from auditor.audit.detectors.test_runs import parse_output

pytestmark = pytest.mark.slow

MODULE = """
import pytest

def test_pass():
    assert 1 == 1

def test_fail():
    assert 1 == 2

@pytest.fixture
def broken():
    raise RuntimeError("fixture broke")

def test_error(broken):
    pass

@pytest.mark.skip(reason="not here")
def test_skip():
    pass

@pytest.mark.xfail(reason="known")
def test_xfail():
    assert False

@pytest.mark.parametrize("n", [1, 2, 3])
def test_param(n):
    assert n != 2
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("project")
    (root / "tests").mkdir()
    (root / "tests" / "test_mod.py").write_text(MODULE)
    return root


@pytest.mark.parametrize(
    "flags",
    [
        [],
        ["-q"],
        ["-qq"],
        ["-v", "--tb=short"],
        ["-rA", "--tb=no"],
        ["-x"],
        ["-k", "param or pass"],
        ["-n", "2"],
    ],
)
def test_pytest_counts_match_its_junit_xml(project: Path, flags: list[str]) -> None:
    report = project / "junit.xml"
    out = subprocess.run(
        [sys.executable, "-m", "pytest", *flags, "tests", f"--junitxml={report}", "-p", "no:cacheprovider"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
    )
    root = ET.parse(report).getroot()
    suite = root if root.tag == "testsuite" else root[0]
    tests, failures, errors, skipped = (
        int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")
    )
    found = parse_output(out.stdout + out.stderr)
    assert found is not None, out.stdout[-500:]
    runner, summary, failed, passed, ids = found
    assert runner == "pytest" and summary in out.stdout
    assert failed == failures + errors
    assert passed == tests - failures - errors - skipped  # JUnit counts an xfail as skipped
    assert len(ids) == failed  # every failure named by its id


@pytest.mark.parametrize("flags", [[], ["-v"], ["-q"], ["-f"]])
def test_unittest_counts_match_its_result(tmp_path: Path, flags: list[str]) -> None:
    (tmp_path / "test_u.py").write_text(
        "import unittest\n"
        "class T(unittest.TestCase):\n"
        "    def test_pass(self): pass\n"
        "    def test_fail(self): self.assertEqual(1, 2)\n"
        "    def test_error(self): raise RuntimeError('boom')\n"
        "    @unittest.skip('no')\n"
        "    def test_skip(self): pass\n"
        "    def test_sub(self):\n"
        "        for i in range(3):\n"
        "            with self.subTest(i=i):\n"
        "                self.assertNotEqual(i, 1)\n"
    )
    out = subprocess.run(
        [sys.executable, "-m", "unittest", *flags, "test_u"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    found = parse_output(out.stdout + out.stderr)
    assert found is not None
    runner, _, failed, passed, ids = found
    # -f stops at the first failure (test_error runs first, alphabetically)
    expected = (
        (1, 0, {"test_u.T.test_error"})
        if flags == ["-f"]
        else (3, 1, {"test_u.T.test_error", "test_u.T.test_fail", "test_u.T.test_sub"})
    )
    assert (runner, failed, passed, set(ids)) == ("unittest", *expected)

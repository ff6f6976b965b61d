"""The one lazy registry behind the detectors, attribution strategies, worlds and CLI modules: naming
an entry imports nothing, loading imports one module, the table's order is kept, and a wrong name
or a malformed entry is a clear error."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from auditor.core.errors import InputError
from auditor.core.registry import Registry
from tests.conftest import REPO


def imported_after(code: str) -> list[str]:
    """The modules a fresh interpreter holds once ``code`` has run."""
    probe = f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_naming_entries_imports_none_of_them_and_loading_imports_only_one() -> None:
    from auditor.audit.attribution import REGISTRY as STRATEGIES
    from auditor.audit.detectors import REGISTRY as DETECTORS
    from worlds import _WORLDS

    registered = {entry.split(":")[0] for r in (DETECTORS, STRATEGIES, _WORLDS) for entry in r.values()}
    started = imported_after(
        "import auditor.surfaces.cli.main\n"
        "from auditor.audit.detectors import available_detectors\n"
        "from auditor.audit.attribution import REGISTRY\n"
        "from worlds import list_worlds\n"
        "assert available_detectors() and list(REGISTRY) and list_worlds()"
    )
    assert not registered & set(started)
    one_world = imported_after("from worlds import get_world\nget_world('b1')")
    assert registered & set(one_world) == {"worlds.b1"}


def test_order_is_the_tables_and_load_returns_the_named_attribute() -> None:
    registry: Registry[object] = Registry("codec", {"z": "json:dumps", "a": "json:loads"})
    assert list(registry) == ["z", "a"] and registry["a"] == "json:loads"
    assert registry.load("a") is json.loads


def test_the_detectors_run_in_the_order_they_are_listed() -> None:
    """Finding ids follow this order: it must be the table's, not an alphabetical one."""
    from auditor.audit.detectors import REGISTRY, available_detectors, load_detector

    names = available_detectors()
    assert names == list(REGISTRY) and names != sorted(names)
    assert type(load_detector(names[0])).__name__ == REGISTRY[names[0]].split(":")[1]


def test_an_unknown_name_lists_the_valid_ones_and_names_the_field() -> None:
    from auditor.audit.attribution import load_strategy
    from worlds import get_world

    with pytest.raises(InputError) as err:
        load_strategy("oracle")
    line = err.value.one_line()
    assert "unknown attribution strategy 'oracle'" in line and "field 'strategy'" in line
    assert "valid: rules, counterfactual" in line
    with pytest.raises(InputError, match="unknown world 'Z9'") as err:
        get_world("z9")
    assert "valid: A1, B1, C1, D1, F1" in err.value.one_line()


@pytest.mark.parametrize("entry", ["json", "json:", ":dumps", "json:dumps:extra"])
def test_a_malformed_entry_is_refused_when_the_table_is_built(entry: str) -> None:
    with pytest.raises(ValueError, match=f"codec 'x': entry {entry!r} is not written module:attribute"):
        Registry("codec", {"x": entry})

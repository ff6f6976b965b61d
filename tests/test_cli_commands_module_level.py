"""Every `auditor` command is a module-level function (a reader, or an ``ast`` walk, finds it by
name; a closure inside ``register()`` hides it), and ``register()`` only attaches commands."""

from __future__ import annotations

import ast
import inspect

import typer

from auditor.surfaces.cli.main import COMMAND_MODULES, app


def callbacks(typer_app: typer.Typer, path: str = "auditor") -> dict[str, object]:
    """Command path → its function, through the sub-apps."""
    found = {f"{path} {c.name or c.callback.__name__}": c.callback for c in typer_app.registered_commands}
    for group in typer_app.registered_groups:
        found |= callbacks(group.typer_instance, f"{path} {group.name}")
    return found


def test_every_command_is_a_module_level_function() -> None:
    commands = callbacks(app)
    assert len(commands) > 40
    nested = sorted(path for path, fn in commands.items() if "<locals>" in fn.__qualname__)
    assert not nested, f"commands defined inside a function: {nested}"


def test_register_defines_nothing() -> None:
    for name in COMMAND_MODULES:
        source = inspect.getsource(COMMAND_MODULES.load(name))
        defined = [
            n.name for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef | ast.ClassDef)
        ]
        assert defined == ["register"], f"{COMMAND_MODULES[name]} defines {defined[1:]} inside register()"

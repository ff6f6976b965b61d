"""The `auditor` command: a thin face over the packages, one module per command group.

Each command module exposes ``register(app)``; heavy imports stay inside the command functions so
that ``auditor --help`` starts fast.
"""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Callable

import typer

from auditor.core.registry import Registry
from auditor.surfaces.cli.common import state

COMMAND_MODULES: Registry[Callable[[typer.Typer], None]] = Registry(
    "command module",
    {
        "store": "auditor.surfaces.cli.store_cmd:register",
        "schemas": "auditor.surfaces.cli.schemas_cmd:register",
        "ingest": "auditor.surfaces.cli.ingest_cmd:register",
        "corpus": "auditor.surfaces.cli.corpus_cmd:register",
        "traces": "auditor.surfaces.cli.traces_cmd:register",
        "review": "auditor.surfaces.cli.review_cmd:register",
        "world": "auditor.surfaces.cli.world_cmd:register",
        "stream": "auditor.surfaces.cli.stream_cmd:register",
        "graph": "auditor.surfaces.cli.graph_cmd:register",
        "repair": "auditor.surfaces.cli.repair_cmd:register",
        "score": "auditor.surfaces.cli.score_cmd:register",
        "serve": "auditor.surfaces.cli.serve_cmd:register",
        "tokens": "auditor.surfaces.cli.tokens_cmd:register",
        "feedback": "auditor.surfaces.cli.feedback_cmd:register",
        "attribute": "auditor.surfaces.cli.attribute_cmd:register",
        "triage": "auditor.surfaces.cli.triage_cmd:register",
        "compare": "auditor.surfaces.cli.compare_cmd:register",
        "evidence": "auditor.surfaces.cli.evidence_cmd:register",
    },
)

app = typer.Typer(
    name="auditor",
    help="Audit and repair LLM multi-agent traces: ingest logs, build interaction graphs, file V3 reports.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"auditor {version('agent-auditor')}")
        raise typer.Exit()


@app.callback()
def main(
    store: str = typer.Option(
        None, "--store", envvar="AUDITOR_STORE", help="Store URL (default sqlite:///auditor.db)."
    ),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks for errors."),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version."
    ),
) -> None:
    state.store_url = store
    state.debug = debug


_LIST_ITEM = re.compile(r"\s*(?:[-*•]|\d+[.)])\s")


def reflowed(text: str) -> str:
    """A docstring's paragraphs as single lines, for the help screen to wrap at the terminal's
    width: the source's hard line breaks otherwise stay and wrap raggedly. A line that opens a
    list item or is indented as an example (four spaces) keeps its break."""
    paragraphs = []
    for paragraph in inspect.cleandoc(text).split("\n\n"):
        lines: list[str] = []
        for line in paragraph.splitlines():
            if lines and not _LIST_ITEM.match(line) and not line.startswith("    "):
                lines[-1] = f"{lines[-1].rstrip()} {line.strip()}"
            else:
                lines.append(line.rstrip())
        paragraphs.append("\n".join(lines))
    return "\n\n".join(paragraphs)


def _reflow_help(typer_app: typer.Typer) -> None:
    """Every command's and group's help text reflowed (``reflowed``), through the sub-apps."""
    for command in typer_app.registered_commands:
        text = command.help or inspect.getdoc(command.callback)
        if text:
            command.help = reflowed(text)
    for group in typer_app.registered_groups:
        sub = group.typer_instance
        text = (
            group.help
            or sub.info.help
            or inspect.getdoc(sub.registered_callback and sub.registered_callback.callback)
        )
        if text:
            sub.info.help = reflowed(text)
        _reflow_help(sub)


for _name in COMMAND_MODULES:
    COMMAND_MODULES.load(_name)(app)
_reflow_help(app)


def run() -> None:
    """Console entry point: user mistakes become one line on stderr and exit code 2."""
    from auditor.core.errors import AuditorError

    try:
        rc = app(standalone_mode=False)  # click returns the exit code of typer.Exit here
        if isinstance(rc, int) and rc:
            sys.exit(rc)
    except AuditorError as exc:
        if state.debug:
            raise
        typer.echo(f"error: {exc.one_line()}", err=True)
        sys.exit(exc.exit_code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        typer.echo("aborted", err=True)
        sys.exit(130)
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        sys.exit(130)
    except _usage_error() as exc:  # a missing argument, an unknown command or option
        exc.show()
        sys.exit(2)
    except ModuleNotFoundError as exc:
        from auditor.surfaces.cli.extras import missing_extra

        line = missing_extra(exc)
        if line is None or state.debug:
            raise
        typer.echo(f"error: {line}", err=True)
        sys.exit(2)


def _usage_error() -> type[Exception]:
    """The parser's usage-error base class: click's ClickException, or the copy of it that newer
    typer releases carry inside (typer._click); found through typer's public BadParameter."""
    return next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


if __name__ == "__main__":
    run()

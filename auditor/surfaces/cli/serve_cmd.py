"""`auditor serve`: the HTTP API and the web console over the store."""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import socket
from pathlib import Path

import typer

from auditor.core.errors import InputError
from auditor.surfaces.cli.common import REDACT, REDACT_PATTERN, err_console, redaction, state

LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")  # uvicorn's


def serve(
    store: str = typer.Option(
        None, "--store", help="Store URL (default: the global --store / AUDITOR_STORE)."
    ),
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to listen on (loopback by default)."),
    port: int = typer.Option(8080, "--port", min=0, max=65535, help="TCP port (0: any free one)."),
    max_body: int = typer.Option(
        16 * 1024 * 1024, "--max-body", min=1024, help="Largest request body accepted, in bytes."
    ),
    log_level: str = typer.Option("info", "--log-level", help=f"uvicorn log level: {', '.join(LOG_LEVELS)}."),
    workers: int = typer.Option(
        1,
        "--workers",
        min=1,
        help="Server processes side by side; about one per core beside the database.",
    ),
    threads: int = typer.Option(
        None,
        "--threads",
        min=1,
        help="Request threads per process (default: 2 per core, at least 4; more for a remote database).",
    ),
    policy: Path = typer.Option(
        None,
        "--policy",
        help="A policy file for every trace, or a directory of policies whose selector.yaml "
        "picks one per trace; POST /api/audit may name one (docs/policy.md).",
    ),
    redact: bool = REDACT,
    redact_pattern: list[str] = REDACT_PATTERN,
) -> None:
    """Serve the API (OpenAPI at /api/openapi.json) and the console (/console/); every request
    but /health needs a token from 'auditor tokens create'. With --redact, every trace
    submitted to /api/audit is redacted before it is stored."""
    redact, patterns = redaction(redact, redact_pattern)
    if log_level.lower() not in LOG_LEVELS:  # uvicorn would fail on it once the store is open
        raise InputError(
            f"unknown log level '{log_level}'",
            field="--log-level",
            hint=f"use one of {', '.join(LOG_LEVELS)}",
        )
    if policy is not None:
        from auditor.audit.policy_selection import load_policies

        load_policies(policy)  # a mistake in a policy is a usage error before the port is taken
    _check_port(host, port)
    try:
        import uvicorn

        from auditor.surfaces.server import ServerConfig, create_app
        from auditor.surfaces.server.app import CONFIG_ENV
        from auditor.surfaces.server.metrics import shared_across_workers
    except ImportError as exc:
        raise InputError(
            f"the server needs its extra: {exc.name} is missing",
            hint="pip install 'agent-auditor[server]'",
        ) from exc
    config = ServerConfig(
        store_url=store or state.store_url,
        max_body=max_body,
        redact=redact,
        redact_patterns=patterns,
        workers=workers,
        policy=str(policy) if policy is not None else None,
        **({"threads": threads} if threads else {}),
    )
    application = create_app(config)  # opens the store here: a bad URL fails before any worker starts
    err_console.print(
        f"auditor console: http://{host}:{port}/console/  (store {application.state.store.safe_url}"
        + (f", {workers} workers)" if workers > 1 else ")")
    )
    options = {"host": host, "port": port, "log_level": log_level.lower(), "server_header": False}
    if workers == 1:
        uvicorn.run(application, **options)
        return
    application.state.store.close()
    os.environ[CONFIG_ENV] = json.dumps(dataclasses.asdict(config))
    with shared_across_workers():  # /metrics sums the workers' series, whichever one answers
        uvicorn.run("auditor.surfaces.server.app:app_from_env", factory=True, workers=workers, **options)


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)


def _check_port(host: str, port: int) -> None:
    """Refuse a port that cannot be bound before anything is printed or opened: uvicorn binds only
    after its banner and "startup complete", so a port in use read as a started server. The probe
    binds as uvicorn does (address family from the host, SO_REUSEADDR: TIME_WAIT is no conflict)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except (OSError, UnicodeError) as exc:
            if isinstance(exc, UnicodeError | socket.gaierror) or exc.errno == errno.EADDRNOTAVAIL:
                raise InputError(  # the host, not the port: no such name, or no address of this machine
                    f"cannot listen on {host}: {getattr(exc, 'strerror', None) or exc}",
                    field="--host",
                    hint="give an address of this machine (127.0.0.1, 0.0.0.0, ::) or a name it resolves",
                ) from exc
            raise InputError(
                f"cannot listen on {host} port {port}: {exc.strerror or exc}",
                field="--port",
                hint="stop the process that holds the port, or choose another --port",
            ) from exc

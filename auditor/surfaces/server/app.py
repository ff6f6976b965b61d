"""The application: one store, the search index kept fresh from it, the API and the console."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio.to_thread
from fastapi import Depends, FastAPI, Request
from fastapi.openapi.utils import get_openapi
from starlette.concurrency import run_in_threadpool

from auditor.audit.policy_selection import load_policies
from auditor.core.store import EventStore, open_store
from auditor.surfaces.server.auth import TokenCache, require
from auditor.surfaces.server.cache import StoreHead, read_engine
from auditor.surfaces.server.metrics import RequestMetrics, app_registry
from auditor.surfaces.server.middleware import BodyLimit, SecurityHeaders
from auditor.surfaces.server.models import Health
from auditor.surfaces.server.problems import install_handlers
from auditor.surfaces.server.search import SearchIndex
from auditor.surfaces.server.views import Views

log = logging.getLogger("auditor.surfaces.server")
DEFAULT_MAX_BODY = 16 * 1024 * 1024
AUDIT_THREADS = 2  # submitted traces audited at once per process; reads never wait behind them


def default_threads() -> int:
    """Request threads per process. Each holds a database connection while it works: two per
    core keep a local PostgreSQL busy, and more only contend for the interpreter and the cores
    while the rest wait their turn in order (at 20 clients on two cores, the slowest 5 % of
    searches took 135-160 ms with 40 threads, 85-100 with 6-12, 77 with 4). A remote database,
    whose round trips leave the cores idle, wants more: `--threads`."""
    return max(4, 2 * (os.cpu_count() or 1))


@dataclass(frozen=True)
class ServerConfig:
    """``redact``: every submitted trace is redacted before it is stored (a client may also ask
    for it per request); ``redact_patterns`` adds patterns (NAME → regex). ``workers``: how many
    processes serve side by side; ``threads``: request threads in each (and its read
    connections); ``policy``: a policy file or directory (``auditor.audit.policy_selection``) the
    audits run under."""

    store_url: str | None = None
    max_body: int = DEFAULT_MAX_BODY
    redact: bool = False
    redact_patterns: dict[str, str] = field(default_factory=dict)
    workers: int = 1
    threads: int = field(default_factory=default_threads)
    policy: str | None = None


CONFIG_ENV = "AUDITOR_SERVE_CONFIG"


def app_from_env() -> Any:
    """One worker's app under `auditor serve --workers N`: uvicorn starts each worker from an
    import string, so the configuration comes from the parent through the environment."""
    return create_app(ServerConfig(**json.loads(os.environ[CONFIG_ENV])))


def create_app(config: ServerConfig | None = None, store: EventStore | None = None) -> Any:
    """The ASGI app over ``store`` (or the store at ``config.store_url``)."""
    config = config or ServerConfig()
    store = store or open_store(config.store_url)

    reader = read_engine(store, config.threads)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        anyio.to_thread.current_default_thread_limiter().total_tokens = config.threads
        app.state.audit_limiter = anyio.CapacityLimiter(AUDIT_THREADS)
        await run_in_threadpool(app.state.index.refresh)  # serve only once the index has caught up
        log.info("search index at position %d", app.state.index.position)
        yield
        if reader is not store.engine:
            reader.dispose()

    app = FastAPI(
        title="auditor",
        version="1",
        summary="Traces, interaction graphs, V3 audit reports and repairs of LLM multi-agent systems.",
        description="Every endpoint but /health needs a bearer token (`auditor tokens create`): "
        "scope `read` for traces and reports, `ingest` to submit a trace, `repair` for repairs, "
        "`review` to confirm or dismiss findings. "
        "Errors are RFC 9457 problem details whose `detail` is the CLI's one-line message.",
        docs_url=None,  # the interactive docs load scripts from a CDN: nothing external is served
        redoc_url=None,
        openapi_url=None,
        redirect_slashes=False,
        lifespan=lifespan,
    )
    app.state.store = store
    app.state.config = config
    app.state.policies = load_policies(config.policy) if config.policy else None
    app.state.head = StoreHead(reader)
    app.state.tokens = TokenCache(store)
    app.state.index = SearchIndex(store, reader)
    app.state.views = Views(store)
    app.state.metrics = app_registry(app.state.index)
    install_handlers(app)

    from auditor.surfaces.server.metrics import router as metrics
    from auditor.surfaces.server.routes_api import router as api
    from auditor.surfaces.server.routes_console import router as console
    from auditor.surfaces.server.routes_feedback import router as feedback
    from auditor.surfaces.server.routes_ingest import router as ingest
    from auditor.surfaces.server.routes_otlp import router as otlp

    app.include_router(api)
    app.include_router(feedback)  # labels on findings (scope review) and per-detector precision
    app.include_router(ingest)
    app.include_router(console)
    app.include_router(otlp)  # POST /v1/traces: OTLP/HTTP spans, assembled and audited
    app.include_router(metrics)  # GET /metrics: Prometheus, with a metrics-scope token

    @app.get("/health", response_model=Health, tags=["health"])
    def health(request: Request) -> Health:
        """Liveness and readiness: the store answers. The only endpoint without a token."""
        request.app.state.head(request)
        return Health(status="ok", store=store.dialect, indexed_position=request.app.state.index.position)

    @app.get("/api/openapi.json", tags=["health"], dependencies=[Depends(require("read"))])
    def openapi() -> dict:
        """This API's OpenAPI description."""
        if app.openapi_schema is None:
            app.openapi_schema = get_openapi(
                title=app.title,
                version=app.version,
                summary=app.summary,
                description=app.description,
                routes=app.routes,
            )
            app.openapi_schema["components"] = app.openapi_schema.get("components", {}) | {
                "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}
            }
            app.openapi_schema["security"] = [{"bearer": []}]
        return app.openapi_schema

    app.add_middleware(SecurityHeaders)
    app.add_middleware(BodyLimit, max_bytes=config.max_body)
    app.add_middleware(RequestMetrics, registry=app.state.metrics)  # outermost: sees the 413s too
    return app

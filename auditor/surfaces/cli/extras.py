"""The optional extras of the package (pyproject's ``optional-dependencies``): which one brings a
module that a command imports when it runs, so that a plain ``pip install`` meets one line naming
the extra to install, not a ModuleNotFoundError traceback.

Keyed by the top-level import name, the one a ModuleNotFoundError carries; a test checks the map
against pyproject.toml, so an extra's new dependency cannot be left out.
"""

from __future__ import annotations

EXTRA_OF = {
    "matplotlib": "draw",
    "torch": "scoring",
    "transformers": "scoring",
    "safetensors": "scoring",
    "gguf": "scoring",
    "accelerate": "scoring",
    "sklearn": "scoring",
    "scipy": "scoring",
    "litellm": "agent",
    "langgraph": "agent",
    "openai": "agent",
    "kafka": "stream",
    "prometheus_client": "stream",  # also in server, whose command says so itself
    "opentelemetry": "stream",
    "google": "stream",  # protobuf
    "fastapi": "server",
    "starlette": "server",
    "anyio": "server",
    "uvicorn": "server",
}


def missing_extra(exc: ModuleNotFoundError) -> str | None:
    """The line to print for a module an extra brings, None for any other missing module (a
    fault of the installation, shown as it is)."""
    top = (exc.name or "").split(".")[0]
    extra = EXTRA_OF.get(top)
    if extra is None:
        return None
    return f"this command needs the '{extra}' extra ({top} is not installed): pip install 'agent-auditor[{extra}]'"

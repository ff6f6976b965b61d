"""`auditor serve`: the HTTP API and the web console over the event store (top floor).

``create_app(ServerConfig(store_url=…, max_body=…))`` builds the ASGI app. Modules:
``app`` (assembly), ``auth`` and ``tokens`` (bearer tokens stored hashed as events),
``problems`` (problem-details errors), ``middleware`` (body limit, security headers),
``index`` and ``search`` (the search projection and its queries), ``views`` (step pages, graphs,
rendered reports, cached by stream version), ``repairs``, ``routes_api``, ``routes_ingest``
(submit for audit, server-sent events), ``routes_console`` and ``console/`` (the web console).
"""

from auditor.surfaces.server.app import DEFAULT_MAX_BODY, ServerConfig, create_app

__all__ = ["DEFAULT_MAX_BODY", "ServerConfig", "create_app"]

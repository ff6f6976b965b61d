"""The web console: static files bundled in the package, served only to a valid token.

A browser cannot send a bearer header when it navigates, so the console signs in once: a request
without a token gets 401 and, for a browser, a sign-in form as the body; the form posts the token
to ``/session``, which checks it and sets it as an HttpOnly, SameSite=Strict cookie. The cookie
counts for reads, and for the console's own writes (see ``auth``). A sign-in or sign-out posted
from a page on another origin is refused: it would switch a browser to the other site's token.
"""

from __future__ import annotations

import html
from pathlib import Path
from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response

from auditor.surfaces.server.auth import COOKIE, authenticate, same_origin
from auditor.surfaces.server.problems import Problem

router = APIRouter(include_in_schema=False)
STATIC = Path(__file__).parent / "console"
_FILES = {p.name: p for p in STATIC.iterdir() if p.suffix in (".html", ".js", ".css", ".svg")}
_MEDIA = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript",
    ".css": "text/css",
    ".svg": "image/svg+xml",
}
MAX_SIGN_IN_BODY = 8 * 1024  # a token and the page to return to; anyone may post it, unsigned
LOGIN_CSP = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'"

_LOGIN = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign in · auditor</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{{font:16px system-ui,sans-serif;max-width:28rem;margin:12vh auto;padding:0 1rem;color:#1d2330}}
input,button{{font:inherit;padding:.5rem;width:100%;box-sizing:border-box;margin:.3rem 0}}
button{{background:#2a4d8f;color:#fff;border:0;border-radius:4px;cursor:pointer}}
.err{{color:#a01a1a}}</style></head>
<body><main><h1>auditor console</h1><p>{message}</p>
<form method="post" action="/session"><label for="token">API token</label>
<input id="token" name="token" type="password" autocomplete="off" autofocus required>
<input type="hidden" name="next" value="{next}">
<button type="submit">Sign in</button></form>
<p><small>Create a token with <code>auditor tokens create --name me --scope read</code>.</small></p>
</main></body></html>"""


def login_page(status: int, message: str, next_path: str = "/console/") -> HTMLResponse:
    body = _LOGIN.format(message=html.escape(message), next=html.escape(next_path, quote=True))
    headers = {"Content-Security-Policy": LOGIN_CSP}
    if status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="auditor"'
    return HTMLResponse(body, status_code=status, headers=headers)


def _wants_html(request: Request) -> bool:
    return "text/html" in request.headers.get("accept", "")


def _guard(request: Request) -> Response | None:
    """None when the request may read the console; else the refusal (a sign-in form for browsers)."""
    try:
        authenticate(request, "read")
    except Problem as exc:
        if _wants_html(request) and exc.status == 401:
            return login_page(401, "Sign in with an API token.", request.url.path)
        raise
    return None


@router.get("/")
def root(request: Request) -> Response:
    """The console for a signed-in reader; a browser that is not signed in is sent to the sign-in
    page (a 401 is for API clients, which get the problem document)."""
    try:
        authenticate(request, "read")
    except Problem as exc:
        if _wants_html(request) and exc.status == 401:
            return RedirectResponse("/session", status_code=303)
        raise
    return RedirectResponse("/console/", status_code=303)


@router.get("/session")
def sign_in_page() -> Response:
    """The sign-in form on its own page, where ``/`` sends a browser that is not signed in."""
    return login_page(200, "Sign in with an API token.")


@router.get("/console")
@router.get("/console/")
@router.get("/console/{name}")
def console_file(request: Request, name: str = "index.html") -> Response:
    refused = _guard(request)
    if refused is not None:
        return refused
    path = _FILES.get(name)
    if path is None:
        raise Problem(404, "not-found", f"no console file '{name}'")
    return FileResponse(path, media_type=_MEDIA[path.suffix], headers={"Cache-Control": "no-cache"})


def _from_this_site(request: Request) -> bool:
    """A form posted from this server's own page. A browser says where a navigation comes from in
    Sec-Fetch-Site; its Origin reads "null" under this server's no-referrer policy, so the Origin
    decides only for a browser that sends no Sec-Fetch-Site."""
    site = request.headers.get("sec-fetch-site")
    if site is not None:
        return site in ("same-origin", "none")
    return request.headers.get("origin") == "null" or same_origin(request)


@router.post("/session")
async def sign_in(request: Request) -> Response:
    """Check a token posted by the sign-in form and keep it in an HttpOnly cookie."""
    body = await request.body()
    if len(body) > MAX_SIGN_IN_BODY:  # parsed, 16 MB of fields held the event loop for seconds
        return login_page(413, "That sign-in form is too large.")
    form = parse_qs(body.decode("utf-8", "replace"))
    token = (form.get("token") or [""])[0].strip()
    next_path = (form.get("next") or ["/console/"])[0]
    if not next_path.startswith("/console/") or "//" in next_path:
        next_path = "/console/"  # never redirect off this server
    if not _from_this_site(request):  # a page elsewhere would sign this browser in as its own token
        return login_page(403, "Sign in from this server's own page.", next_path)
    record = request.app.state.tokens.lookup(token) if token else None
    if record is None:
        return login_page(401, "That token is unknown or revoked.", next_path)
    if "read" not in record.scopes:
        return login_page(403, f"The token '{record.name}' lacks the 'read' scope.", next_path)
    response = RedirectResponse(next_path, status_code=303)
    response.set_cookie(
        COOKIE, token, httponly=True, samesite="strict", secure=request.url.scheme == "https", path="/"
    )
    return response


@router.post("/session/logout")
def sign_out(request: Request) -> Response:
    if not _from_this_site(request):
        raise Problem(403, "forbidden", "sign out from this server's own page")
    response = RedirectResponse("/console/", status_code=303)
    response.delete_cookie(COOKIE, path="/")
    return response

"""Who may use the console: the person who was given its URL, from a page the console served.

The console acts with the credential it holds (the local API key, or the operator's AWS credentials
with `asya console --stack`), so a web page the operator happens to visit must not act through it:

- **a session token**: `serve` draws one per console and prints the URL with it (`/?token=…`); a
  request that carries it gets it back as an HttpOnly, SameSite=Strict cookie, and a request with
  neither is refused (403);
- **a Host allow-list**: only `127.0.0.1`, `localhost` and `[::1]` at the console's own port (400
  otherwise), so a page whose name is rebound to 127.0.0.1 (DNS rebinding) is not answered;
- **CSRF**: every POST carries a form token drawn from the session token (`csrf_field()` in each
  form) and comes from the console's own origin (`Origin`, or `Referer` when a browser sends no
  `Origin`); a POST with neither, or from another site, is refused (403) and does nothing.
"""

from __future__ import annotations

import hashlib
import hmac
from urllib.parse import urlsplit

from flask import Flask, Response, request
from markupsafe import Markup

TOKEN_PARAMETER = "token"
CSRF_FIELD = "csrf"
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]"})
NO_TOKEN = (
    "This console needs its session token: open the URL `asya up` or `asya console` printed (it ends in ?token=...)."
)
FOREIGN_HOST = "this console answers only to 127.0.0.1, localhost or [::1] at its own port"
FOREIGN_POST = "Refused: a form sent to this console must come from one of its own pages (Origin, CSRF token)."


def guard(app: Flask, token: str) -> None:
    """Refuse, before any page runs, what the module's rules refuse; give forms their CSRF field."""

    @app.before_request
    def checked() -> Response | None:
        if not _loopback_host(request.host, str(request.environ.get("SERVER_PORT", ""))):
            return _refused(
                400, f"Refused: this console answers only to 127.0.0.1, localhost or [::1], not {request.host!r}."
            )
        if not (_same(request.args.get(TOKEN_PARAMETER), token) or _same(request.cookies.get(_cookie()), token)):
            return _refused(403, NO_TOKEN)
        if request.method not in ("GET", "HEAD", "OPTIONS") and not (
            _own_origin() and _same(request.form.get(CSRF_FIELD), csrf_token(token))
        ):
            return _refused(403, FOREIGN_POST)
        return None

    @app.after_request
    def remembered(response: Response) -> Response:
        if _same(request.args.get(TOKEN_PARAMETER), token):
            response.set_cookie(_cookie(), token, httponly=True, samesite="Strict", path="/")
        return response

    app.jinja_env.globals["csrf_field"] = lambda: Markup(
        f'<input type="hidden" name="{CSRF_FIELD}" value="{csrf_token(token)}">'
    )


def csrf_token(token: str) -> str:
    """The forms' token: drawn from the session token, so it changes with each console and needs no store."""
    return hmac.new(token.encode(), b"asya-console-csrf", hashlib.sha256).hexdigest()


def _cookie() -> str:
    """One cookie per port: browsers share cookies between ports, and two consoles may be open at once."""
    return f"asya_console_{request.environ.get('SERVER_PORT', '')}"


def _same(given: str | None, expected: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


def _loopback_host(host: str, port: str) -> bool:
    """`host` (the Host header) names a loopback address at the console's own port (80 when unsaid)."""
    if host.endswith("]") or ":" not in host:
        name, given_port = host, ""
    else:
        name, _, given_port = host.rpartition(":")
    return name.lower() in LOOPBACK_NAMES and (given_port or "80") == port


def _own_origin() -> bool:
    """The request comes from a page of this console: its `Origin`, or else its `Referer`, is ours."""
    ours = f"http://{request.host}"
    origin = request.headers.get("Origin")
    if origin is not None:
        return origin == ours
    referer = urlsplit(request.headers.get("Referer", ""))
    return f"{referer.scheme}://{referer.netloc}" == ours


def _refused(status: int, why: str) -> Response:
    return Response(why + "\n", status=status, mimetype="text/plain")

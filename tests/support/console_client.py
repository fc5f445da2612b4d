"""The console's pages in the unit tests, as its own browser tab sends them: with the session cookie,
from the console's origin, each form with its CSRF field (`asya_local.console.guard`)."""

from __future__ import annotations

from typing import Any

from flask.testing import FlaskClient

from asya_local.console.app import Console, create_app
from asya_local.console.guard import CSRF_FIELD, csrf_token

TOKEN = "unit-console-token"
OWN_ORIGIN = "http://localhost"  # the test client's Host


class SignedIn(FlaskClient):
    """A client whose posts carry the form's CSRF field, as the console's own forms do."""

    def post(self, *args: Any, **kwargs: Any) -> Any:
        kwargs["data"] = {CSRF_FIELD: csrf_token(TOKEN), **(kwargs.get("data") or {})}
        return super().post(*args, **kwargs)


def console_client(console: Console) -> FlaskClient:
    """A client of `console`'s pages that opened the console's URL (its token) once."""
    app = create_app(console, TOKEN)
    app.test_client_class = SignedIn
    client = app.test_client()
    client.environ_base["HTTP_ORIGIN"] = OWN_ORIGIN
    assert client.get(f"/static/console.css?token={TOKEN}").status_code == 200  # sets the cookie
    return client

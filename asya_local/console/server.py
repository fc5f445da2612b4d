"""The console served on loopback: Werkzeug's threaded server (Flask's), a thread per connection, so
that each page's event streams hold up nothing else. Loopback only: the console acts with the gateway
credential it holds, so it also answers only to its session token, drawn here and given in `opening_url`
(`asya_local.console.guard`)."""

from __future__ import annotations

import logging
import secrets
import threading
from dataclasses import dataclass

from werkzeug.serving import BaseWSGIServer, make_server

from asya_local.console.app import Console, create_app

HOST = "127.0.0.1"


@dataclass
class ConsoleServer:
    server: BaseWSGIServer
    thread: threading.Thread
    token: str

    @property
    def url(self) -> str:
        """Where the pages are, without the token: a browser that opened `opening_url` has its cookie."""
        return origin(self.server.server_port)

    @property
    def opening_url(self) -> str:
        """The URL to print and open: the mesh page, with the session token."""
        return f"{self.url}/?token={self.token}"

    def stop(self) -> None:
        self.server.shutdown()
        self.thread.join(timeout=5)


def origin(port: int) -> str:
    """The origin of the console's pages on `port`, as a browser names it (`Origin`)."""
    return f"http://{HOST}:{port}"


def serve(console: Console, port: int = 0) -> ConsoleServer:
    """Start serving `console` on `port` (0: any free one) in a thread; `stop()` ends it."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    token = secrets.token_urlsafe(32)
    server = make_server(HOST, port, create_app(console, token), threaded=True)
    server.daemon_threads = True  # type: ignore[attr-defined]  # a ThreadingMixIn's: streams keep no process alive
    thread = threading.Thread(target=server.serve_forever, name="asya-console", daemon=True)
    thread.start()
    return ConsoleServer(server, thread, token)

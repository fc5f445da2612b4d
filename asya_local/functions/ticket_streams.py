"""A follow ticket's stream on the local API (`GET /follow/{id}?ticket=`, `asya_gateway.tickets`), as
the deployed API serves it: open to a request without a key, signature or token, `ticket` required
before the function runs (the REST API's request validator's 400), and, here where a stream runs as
long as its task, ended once the ticket lapses, since on AWS the reconnect after the lapse is refused."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from asya_local.functions.rest_proxy import HttpRequest, HttpResponse, gateway_answer

TICKET_ROUTE = re.compile(r"/follow/([^/]+)")


def ticket_route(request: HttpRequest) -> re.Match[str] | None:
    """The followed task's match (its id the first group), for a `GET /follow/{id}`; None otherwise."""
    return TICKET_ROUTE.fullmatch(request.path) if request.method == "GET" else None


def missing_ticket(request: HttpRequest) -> HttpResponse | None:
    """API Gateway's validator's answer to a request without `ticket`; None when it has one."""
    if dict(request.query).get("ticket"):
        return None
    return gateway_answer(400, "Missing required request parameters: [ticket]", request.request_id)


def while_ticket_holds(chunks: Iterator[str], holds: Callable[[], bool]) -> Iterator[str]:
    """The stream's chunks while `holds()` (its ticket opens, checked at each chunk, a keepalive at least
    every 15 s). On AWS the stream comes in bounded answers and the reconnect after the lapse is a 401,
    so a page that does not ask for a new ticket stops following there: here too, where the browser's
    reconnect meets the same refusal. The task's stream is closed either way."""
    try:
        for chunk in chunks:
            if not holds():
                return
            yield chunk
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()

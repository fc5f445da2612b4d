"""A request's body as the local API reads it (`asya_local.functions.gateway_server`): by its
`Content-Length` or chunk by chunk, up to API Gateway's payload limit, which API Gateway answers with a
413; a length that is not a number, or is negative, is a 400. Either is answered before the rest of
the body is read, and before any function runs."""

from __future__ import annotations

from email.message import Message
from io import BufferedIOBase

MAX_REQUEST_BODY_BYTES = 10 * 1024 * 1024  # API Gateway's REST payload limit: it answers 413 past it


class UnreadableBodyError(Exception):
    """A body refused unread: `status` is the answer's (400 or 413)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def read_body(headers: Message, rfile: BufferedIOBase) -> bytes:
    """The request body, up to API Gateway's payload limit (413 past it, 400 if it is framed wrong)."""
    if "chunked" in headers.get("Transfer-Encoding", "").lower():
        body = bytearray()
        while size := _length(rfile.readline().split(b";")[0].strip() or b"0", 16):
            if len(body) + size > MAX_REQUEST_BODY_BYTES:
                raise UnreadableBodyError(413, "Request Too Long")
            body += rfile.read(size)
            rfile.readline()
        while rfile.readline().strip():  # trailers, up to the blank line
            pass
        return bytes(body)
    length = _length(headers.get("Content-Length") or "0", 10)
    if length > MAX_REQUEST_BODY_BYTES:
        raise UnreadableBodyError(413, "Request Too Long")
    return rfile.read(length)


def _length(text: str | bytes, base: int) -> int:
    try:
        length = int(text, base)
    except ValueError:
        raise UnreadableBodyError(400, "Bad Request: the body's length is not a number") from None
    if length < 0:
        raise UnreadableBodyError(400, "Bad Request: the body's length is negative")
    return length

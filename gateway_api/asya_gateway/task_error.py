"""The one way the gateway refuses a request, whichever door it came in by: an HTTP status and what is
wrong (the REST API answers it as is; MCP and the sump's tools carry it in their own errors)."""

from __future__ import annotations


class TaskError(Exception):
    """A request the gateway refuses; `status` is the HTTP status, the message says what is wrong."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status

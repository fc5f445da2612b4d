"""The actor's log records written once, and nobody else's dropped.

Powertools' `Logger(service=actor)` writes the actor's records through a handler of its own and, so
that they are not written a second time by the root logger's handlers (Lambda's runtime has one),
gives each of those handlers a filter that drops every record whose logger's name *contains* the
service's. For an actor named `a`, `core` or `consumer` that filter also drops `asya.consumer`'s,
`botocore`'s and every other library's records, warnings included, on Lambda and in a container.
`exact_dedup` swaps it for a filter that drops only the actor's own logger and its children.
"""

from __future__ import annotations

import logging

from aws_lambda_powertools.logging.filters import SuppressFilter


class OwnRecords(logging.Filter):
    """Drops the records of one logger and its children (`name`, `name.*`): its own handler wrote them."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.logger = name

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.name == self.logger or record.name.startswith(f"{self.logger}."))


def exact_dedup(service: str) -> None:
    """Replace Powertools' filter for `service` on the root logger's handlers with `OwnRecords`."""
    for handler in logging.root.handlers:
        broad = [found for found in handler.filters if isinstance(found, SuppressFilter) and found.logger == service]
        for found in broad:
            handler.removeFilter(found)
        if broad:
            handler.addFilter(OwnRecords(service))

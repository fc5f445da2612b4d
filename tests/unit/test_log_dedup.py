"""An actor's name does not silence other loggers (`asya.log_dedup`): Powertools' filter on the root
logger's handlers dropped every logger whose name contains the actor's, `asya.consumer`'s warnings
for an actor named `a`; the actor's own records are still written once."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from asya.telemetry import Telemetry


class Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.names.append(record.name)


@pytest.fixture
def root_handler() -> Iterator[Kept]:
    """A handler on the root logger, as Lambda's runtime installs one."""
    kept = Kept()
    logging.root.addHandler(kept)
    yield kept
    logging.root.removeHandler(kept)


def test_an_actor_named_a_leaves_the_consumer_s_warnings_alone(root_handler: Kept) -> None:
    Telemetry("unit", "a")
    logging.getLogger("asya.consumer").warning("visibility of 1 message not changed")
    logging.getLogger("botocore.credentials").warning("found credentials")
    assert root_handler.names == ["asya.consumer", "botocore.credentials"]


def test_the_actor_s_own_records_are_not_written_twice(root_handler: Kept) -> None:
    """(Another actor's name: Powertools sets a logger up once per process, with the handlers the root
    has then.)"""
    telemetry = Telemetry("unit", "core")
    telemetry.logger.warning("once, by its own handler")
    logging.getLogger("core.child").warning("a child of its logger")
    logging.getLogger("botocore.credentials").warning("found credentials")
    assert root_handler.names == ["botocore.credentials"]

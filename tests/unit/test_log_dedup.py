"""An actor's name does not silence other loggers (`asya.log_dedup`): Powertools' filter on the root
logger's handlers dropped every logger whose name contains the actor's, `asya.consumer`'s warnings
for an actor named `a`; the actor's own records are still written once.

Each test's actor has a name no other test gives one: Powertools sets a logger up (and adds its filter
to the handlers the root has then) only the first time a process makes it."""

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


def test_an_actor_named_like_part_of_a_logger_leaves_its_warnings_alone(root_handler: Kept) -> None:
    Telemetry("unit", "onsume")
    logging.getLogger("asya.consumer").warning("visibility of 1 message not changed")
    assert root_handler.names == ["asya.consumer"]


def test_the_actor_s_own_records_are_not_written_twice(root_handler: Kept) -> None:
    telemetry = Telemetry("unit", "tocore")
    telemetry.logger.warning("once, by its own handler")
    logging.getLogger("tocore.child").warning("a child of its logger")
    logging.getLogger("botocore.credentials").warning("found credentials")
    assert root_handler.names == ["botocore.credentials"]

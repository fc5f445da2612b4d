"""The `ASYA_*` variables a container actor's consumer loop reads (`python -m asya.consumer`), besides the
sidecar's: the container table of `docs/configuration.md`. `asya.variables` gathers them with every
other component's."""

from __future__ import annotations

from typing import Any

from asya.env_variable import Component, Variable, integer, number, text

_CONTAINER = (Component.CONTAINER,)

QUEUE_URL = Variable(
    "ASYA_QUEUE_URL", _CONTAINER, "the URL of the actor's queue, which the consumer long-polls", "", text, "required"
)

CONSUMER_CONCURRENCY = Variable(
    "ASYA_CONSUMER_CONCURRENCY", _CONTAINER, "hops at once in one task: one consumer process each", 1, integer(1)
)

CONSUMER_BATCH_SIZE = Variable(
    "ASYA_CONSUMER_BATCH_SIZE",
    _CONTAINER,
    "messages one consumer process receives and runs at a time (1 to 10); a process that dies returns all of them",
    1,
    lambda name, raw: int(number(1, 10)(name, raw)),
)

HOP_TIME_LIMIT = Variable(
    "ASYA_HOP_TIME_LIMIT_SECONDS",
    _CONTAINER,
    "the most one received batch may take, as a Lambda function's timeout does (at most 43200: SQS extends a "
    "message's visibility to 12 hours from its receipt and no further)",
    3600.0,
    number(1, 43200),
    "`3600`",
)

STOP_GRACE = Variable(
    "ASYA_STOP_GRACE_SECONDS",
    _CONTAINER,
    "the task's stop timeout: after SIGTERM, hops in flight get this long (less 2 s) to finish; what is not "
    "finished by then is released to its queue",
    30.0,
    number(0, 120),
    "`30`",
)

VARIABLES: tuple[Variable[Any], ...] = (
    QUEUE_URL,
    CONSUMER_CONCURRENCY,
    CONSUMER_BATCH_SIZE,
    HOP_TIME_LIMIT,
    STOP_GRACE,
)

"""What the mesh calls its resources, in one place: the CDK constructs name them with these functions
and the mesh file's checks measure the same names against AWS's limits, so the two cannot disagree."""

from __future__ import annotations

from asya.config import SINK, SUMP

PAUSE = "x-pause"
RESUME = "x-resume"
CREW = (SINK, SUMP, PAUSE, RESUME)
SUMP_DEAD_LETTERS = "x-sump-dlq"
GATEWAY = "gateway"
GATEWAY_STREAM = "gateway-stream"
GATEWAY_BACKSTOP = "gateway-backstop"
GATEWAY_FUNCTIONS = (GATEWAY, GATEWAY_STREAM, GATEWAY_BACKSTOP)
GATEWAY_STREAM_DEAD_LETTERS = "gateway-stream-dlq"
# Names the mesh itself gives to functions and queues of `asya-<ns>-*`; an actor of that name would clash.
RESERVED = (*CREW, SUMP_DEAD_LETTERS, *GATEWAY_FUNCTIONS, GATEWAY_STREAM_DEAD_LETTERS)

# The mesh's tables, `asya-<ns>-<table>`: named, not generated, so every name the mesh hands its
# functions has a known length.
TASKS_TABLE = "tasks"
EVENTS_TABLE = "task-events"
IDEMPOTENCY_TABLE = "idempotency"
BATCHES_TABLE = "spark-batches"


def resource_name(namespace: str, name: str) -> str:
    """`asya-<ns>-<name>`: an actor's queue, function and EMR Serverless application; the crew's and the
    gateway's functions; the mesh's tables."""
    return f"asya-{namespace}-{name}"


def collector_name(namespace: str, actor: str) -> str:
    """A Spark actor's collector function."""
    return resource_name(namespace, f"x-collect-{actor}")

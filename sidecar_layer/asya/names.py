"""What the mesh calls things, in one place: the CDK app names resources with these, the functions
find their queues, tables and indexes with them, and the local stack builds the same names, so no two
can disagree. The crew's actors are named here too: the envelope's rules (x-sink and x-sump end every
route), the gateway's flows (x-pause) and the mesh file's checks all read them from here."""

from __future__ import annotations

from functools import lru_cache

DISTRIBUTION = "asya-aws"  # the name `pip install` knows the project by: its version, its pins, its extras
# Where a deployed mesh records the release that built it (`asya.__version__`): a tag on every resource
# `AsyaMesh` makes (and on `MeshStack` itself), and the stack's output of that name.
VERSION_TAG = "asya:version"
VERSION_OUTPUT = "AsyaVersion"
# the stack's output of its container actors' ECS services (`asya_cdk.container.container_services`)
CONTAINER_SERVICES_OUTPUT = "ContainerServices"
SINK = "x-sink"
SUMP = "x-sump"
PAUSE = "x-pause"
RESUME = "x-resume"
CREW = (SINK, SUMP, PAUSE, RESUME)
# Of the crew, those a route may name: x-sink and x-sump end every route by themselves, and x-resume is
# started by the gateway; a person's wait is a step of the route.
ROUTED_CREW = (PAUSE,)
SUMP_DEAD_LETTERS = "x-sump-dlq"
GATEWAY = "gateway"
GATEWAY_STREAM = "gateway-stream"
GATEWAY_BACKSTOP = "gateway-backstop"
GATEWAY_FUNCTIONS = (GATEWAY, GATEWAY_STREAM, GATEWAY_BACKSTOP)
GATEWAY_STREAM_DEAD_LETTERS = "gateway-stream-dlq"
# where an MCP host registers a client of the mesh's pool: the function's route, and the API's open,
# separately throttled method (`asya_gateway.oauth`, `asya_cdk.rest_api`, `asya_cdk.http_api`)
OAUTH_REGISTER_PATH = "/oauth/register"
MCP_PATH = "/mcp"  # the gateway's MCP route: the one a registered MCP host's token opens (`asya_gateway.callers`)
SPARK_GUARD = "x-spark-guard"  # stops a Spark application before CloudFormation updates it
BACKLOG = "x-backlog"  # publishes the container actors' backlog each minute (`asya_crew.backlog`)
# Names the mesh itself gives to functions and queues of `asya-<ns>-*`; an actor of that name would clash.
RESERVED = (*CREW, SUMP_DEAD_LETTERS, *GATEWAY_FUNCTIONS, GATEWAY_STREAM_DEAD_LETTERS)


def mesh_own(name: str) -> bool:
    """Whether `name` is one the mesh gives its own actors and functions (`x-…`: the crew, a Spark
    actor's collector, the Spark guard): no actor of a mesh file may be called so, a client's route
    may name only x-pause of them, and the dashboard's per-actor charts leave them out."""
    return name.startswith("x-")


def routable(name: str) -> bool:
    """Whether a route may name `name`, as far as the mesh's own names go: any name but theirs, of which
    only `ROUTED_CREW`. One rule for the mesh file's flows, the gateway's routes and `asya send --route`;
    whether such an actor exists is each one's own question (an actor of the mesh file, a queue)."""
    return not mesh_own(name) or name in ROUTED_CREW


# An actor's name in the mesh file and in a route a client sends: lower case, digits and dashes, as
# every AWS resource named after it accepts.
ACTOR_NAME = r"^[a-z0-9][a-z0-9-]*$"

# The mesh's tables, `asya-<ns>-<table>`: named, not generated, so every name the mesh hands its
# functions has a known length.
TASKS_TABLE = "tasks"
EVENTS_TABLE = "task-events"
IDEMPOTENCY_TABLE = "idempotency"
BATCHES_TABLE = "spark-batches"
SUMP_TABLE = "sump"  # what x-sump kept, by envelope id (`asya.sump`)
JOINS_TABLE = "joins"  # the branches a join actor is gathering (`asya.join_table`)
STATE_TABLE = "actor-state"  # the keys of the actors with `state:` (`asya.state_store`)
# The tasks table's indexes: tasks by status (listings), open tasks by deadline (the backstop), tasks
# by the start of their id, whatever its case (short ids: `asya.short_ids`).
BY_STATUS = "by-status"
BY_DEADLINE = "by-deadline"
BY_ID_PREFIX = "by-id-prefix"


def mesh_prefix(namespace: str) -> str:
    """`asya-<ns>`: what every name a mesh gives starts with, so one IAM pattern (`asya-<ns>-*`) scopes
    them all; also the stack's, the dashboard's and the hop records' key prefix."""
    return f"asya-{namespace}"


@lru_cache(maxsize=1024)  # a hop names the queue of each output twice: the mesh's few names, kept
def resource_name(namespace: str, name: str) -> str:
    """`asya-<ns>-<name>`: an actor's queue (crew included, docs/spec/envelope.md, "Queues"), function
    and EMR Serverless application; the crew's and the gateway's functions; the mesh's tables."""
    return f"{mesh_prefix(namespace)}-{name}"


def collector_name(namespace: str, actor: str) -> str:
    """A Spark actor's collector function."""
    return resource_name(namespace, f"x-collect-{actor}")

"""The `ASYA_*` variables an actor's function reads first (the sidecar, `asya.config.SidecarConfig`): the
actor's table of `docs/configuration.md`. Some are read by other components too (each variable's
`components` says which). `asya.variables` gathers them with every other component's."""

from __future__ import annotations

from typing import Any

from asya.env_variable import Component, Variable, choice, flag, integer, mesh_name, number, text, text_or_none

_ACTOR = (Component.ACTOR,)

# What every function of the mesh names itself by.
NAMESPACE = Variable(
    "ASYA_NAMESPACE",
    (Component.ACTOR, Component.CREW, Component.GATEWAY),
    "the mesh namespace; queues are `asya-<namespace>-<actor>`",
    "",
    mesh_name,
    "required",
)

# The sidecar (`asya.config.SidecarConfig`).
ACTOR = Variable(
    "ASYA_ACTOR_NAME",
    _ACTOR,
    "this actor's name; envelopes whose `route.curr` differs go to `x-sump`",
    "",
    mesh_name,
    "required",
)

HANDLER = Variable(
    "ASYA_HANDLER",
    _ACTOR,
    "`module.function` or `module.Class.method` (class created once, no arguments)",
    "",
    text,
    "required",
)

HANDLER_MODE = Variable(
    "ASYA_HANDLER_MODE",
    _ACTOR,
    "`envelope` passes the whole envelope to the handler and expects envelopes back",
    "payload",
    choice("payload", "envelope"),
)

RESILIENCY = Variable(
    "ASYA_RESILIENCY",
    _ACTOR,
    'JSON `{"policies": {name: policy}, "rules": [{"errors": [...], "policy": name or policy}]}`; see '
    "[actors.md](actors.md#resiliency)",
    "",
    text,
    "none",
)

ACTOR_TIMEOUT = Variable(
    "ASYA_ACTOR_TIMEOUT_SECONDS", _ACTOR, "the most one message may take in the handler", None, number(0.001)
)

LAMBDA_MARGIN = Variable(
    "ASYA_LAMBDA_MARGIN_SECONDS",
    _ACTOR,
    "time kept back from the invocation's end for sending; a record that cannot start before it is left for redelivery",
    2.0,
    number(0.0),
    "`2`",
)

MAX_MESSAGE_BYTES = Variable(
    "ASYA_MAX_MESSAGE_BYTES",
    _ACTOR,
    "the SQS message size limit of the queues (1 MiB); larger outputs go to `x-sump`",
    1_048_576,
    integer(1024),
)

CLAIM_BUCKET = Variable(
    "ASYA_CLAIM_BUCKET",
    (Component.ACTOR, Component.CREW, Component.GATEWAY),
    "the bucket where payloads over the claim-check threshold travel (`claims/<ns>/`); unset: none do",
    None,
    text_or_none,
)

CLAIM_CHECK_BYTES = Variable(
    "ASYA_CLAIM_CHECK_BYTES",
    (Component.ACTOR, Component.CREW, Component.GATEWAY),
    "an envelope over this many bytes travels with its payload in S3 (`payloads.claim_check_bytes`)",
    458_752,
    integer(1024),
)

SEND_ATTEMPTS = Variable(
    "ASYA_SEND_ATTEMPTS",
    _ACTOR,
    "tries per `SendMessageBatch` entry before its record is reported as a batch item failure",
    3,
    integer(1),
)

TRACING = Variable(
    "ASYA_TRACING",
    (Component.ACTOR, Component.CREW, Component.GATEWAY),
    "`true`: a segment per hop in the task's AWS X-Ray trace (the gateway's: the create's), and the Powertools "
    "Tracer; set for every function by the mesh's `tracing`, or by an actor's",
    False,
    flag,
    "`false`",
)

STATUS_WRITES = Variable(
    "ASYA_STATUS_WRITES",
    _ACTOR,
    "`every-point` also writes the received and running points of every hop to the task record (debugging); "
    "`coalesced` writes one claim per hop",
    "coalesced",
    choice("coalesced", "every-point"),
)

FLOW_VERSIONS = Variable(
    "ASYA_FLOW_VERSIONS",
    (Component.ACTOR, Component.CREW),
    "the versions of the flow programs the mesh deployed, comma-separated: an envelope whose `x-asya-flow` "
    'carries any other program goes to x-sump as `UnknownProgram` (docs/flows.md, "Safety"); none: no '
    "program runs here",
    "",
    text,
    "none",
)

JOINED_BY = Variable(
    "ASYA_JOINED_BY",
    _ACTOR,
    "the join actors that gather this actor's fan-out branches (those whose `join.branches_of` names it), "
    "comma-separated; its outputs bound for one carry a join frame",
    "",
    text,
    "none",
)

SECRETS = Variable(
    "ASYA_SECRETS",
    _ACTOR,
    'JSON `{variable: "secretsmanager:<name>" or "ssm:<name>", "#<key>" for one field}`: the mesh file\'s '
    "`secrets`, read at the execution environment's start into those variables (`asya.startup`)",
    "",
    text,
    "none",
)

FILES = Variable(
    "ASYA_FILES",
    _ACTOR,
    'JSON `{variable: [s3 URL, name, "file" | "zip" | "prefix"]}`: the mesh file\'s `files`, downloaded at '
    "the execution environment's start into its temporary folder, each path in its variable (`asya.startup`)",
    "",
    text,
    "none",
)

JOIN = Variable(
    "ASYA_JOIN",
    _ACTOR,
    'this actor is a join: JSON of its `join.on_failure`, `"fail_fast"`, `"collect"` or `{"tolerate": 2}` / '
    '`{"tolerate": "10%"}`; it receives its branches\' results as one list',
    "",
    text,
    "none",
)

JOIN_MAX_WIDTH = Variable(
    "ASYA_JOIN_MAX_WIDTH",
    _ACTOR,
    "the most branches one fan may have for this join (`join.max_width`): a wider fan fails its join at once, "
    "saying so, rather than a completing arrival past its function's timeout",
    10_000,
    integer(1),
)

# Tables and buckets, named by the mesh: a feature backed by one is on when it is named.
TASKS_TABLE = Variable(
    "ASYA_TASKS_TABLE",
    (Component.ACTOR, Component.CREW, Component.GATEWAY),
    "the task table: status tracking, each hop's claim and the pre-flight check (set when the mesh has a "
    "status gateway)",
    None,
    text_or_none,
)

EVENTS_TABLE = Variable(
    "ASYA_EVENTS_TABLE",
    (Component.ACTOR, Component.GATEWAY),
    "the live log of watched tasks (FLY events, status changes) the gateway streams",
    None,
    text_or_none,
)

FLY_DOMAIN = Variable(
    "ASYA_FLY_DOMAIN",
    (Component.ACTOR, Component.GATEWAY),
    "the HTTP domain of the mesh's AppSync Events API, FLY's fast lane (`gateway.fly: channel`): the sidecar "
    "publishes each FLY event there instead of appending it to the live log",
    None,
    text_or_none,
)

JOINS_TABLE = Variable(
    "ASYA_JOINS_TABLE",
    _ACTOR,
    "the joins table (partition key `fan`, sort key `slot`): the branches a join actor is gathering (set on "
    "join actors)",
    None,
    text_or_none,
)

STATE_TABLE = Variable(
    "ASYA_STATE_TABLE",
    _ACTOR,
    "the actor state table (partition key `key`: `<actor>#<key>`), read and written by `asya.state` (set on "
    "actors with `state:`)",
    None,
    text_or_none,
)

STATE_BUCKET = Variable(
    "ASYA_STATE_BUCKET",
    _ACTOR,
    "the bucket of state values too large for a state item (`<actor>/...`); unset: such values are refused",
    None,
    text_or_none,
)

STATE_TTL_DAYS = Variable(
    "ASYA_STATE_TTL_DAYS",
    _ACTOR,
    "how long a state key not written again is kept (the actor's `state.ttl_days`); unset: for good",
    None,
    integer(1),
    "for good",
)

TASK_TTL = Variable(
    "ASYA_TASK_TTL_SECONDS",
    (Component.ACTOR, Component.CREW, Component.GATEWAY),
    "how long a finished task stays readable (the mesh's `gateway.task_ttl_seconds`)",
    7 * 86_400,
    integer(60),
)

IDEMPOTENCY_TABLE = Variable(
    "ASYA_IDEMPOTENCY_TABLE",
    (Component.ACTOR, Component.CREW),
    "DynamoDB table (partition key `id`, string) for duplicate suppression across invocations of envelopes the "
    "task table does not track (stealth mode, no status gateway); costs two conditional writes per such hop (set "
    "by the mesh when `idempotency: true`, the default). A tracked envelope's hop is claimed in its task record, "
    "by its status write",
    None,
    text_or_none,
)

IDEMPOTENCY_TTL = Variable(
    "ASYA_IDEMPOTENCY_TTL_SECONDS",
    (Component.ACTOR, Component.CREW),
    "how long a completed hop is remembered; a redelivery later than this runs again",
    3600,
    integer(1),
)

SEAL_SECRET = Variable(
    "ASYA_SEAL_SECRET",
    (Component.ACTOR, Component.CREW, Component.GATEWAY),
    "the ARN of the Secrets Manager secret the mesh seals its envelopes with (an HMAC, `asya.seal`): an "
    "envelope without a good seal came from outside the mesh and is admitted as a new task or refused "
    '(docs/security.md, "The queue door"); unset: nothing is sealed and every envelope is trusted',
    None,
    text_or_none,
)

VARIABLES: tuple[Variable[Any], ...] = (
    NAMESPACE,
    ACTOR,
    HANDLER,
    HANDLER_MODE,
    RESILIENCY,
    ACTOR_TIMEOUT,
    LAMBDA_MARGIN,
    MAX_MESSAGE_BYTES,
    CLAIM_BUCKET,
    CLAIM_CHECK_BYTES,
    SEND_ATTEMPTS,
    TRACING,
    STATUS_WRITES,
    FLOW_VERSIONS,
    JOINED_BY,
    SECRETS,
    FILES,
    JOIN,
    JOIN_MAX_WIDTH,
    TASKS_TABLE,
    EVENTS_TABLE,
    FLY_DOMAIN,
    JOINS_TABLE,
    STATE_TABLE,
    STATE_BUCKET,
    STATE_TTL_DAYS,
    TASK_TTL,
    IDEMPOTENCY_TABLE,
    IDEMPOTENCY_TTL,
    SEAL_SECRET,
)

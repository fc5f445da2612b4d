"""Every `ASYA_*` variable the mesh's functions read, with its type, default and meaning, in one place.

The CDK app writes a function's environment with these names (`asya_cdk.environment`), each function
reads its settings through them (`SidecarConfig`, `CrewSettings`, `GatewaySettings`, `SparkSettings`),
and `docs/configuration.md` lists them, one table per component, checked against this module by a
test. A variable read here turns into a typed value or a `ConfigError` that names it, so a function
with a bad environment fails at its first invocation with a message that says which variable to fix.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Generic, TypeVar

from asya.names import ACTOR_NAME

T = TypeVar("T")
PREFIX = "ASYA_"  # a mesh file's `environment` may not set a variable with it


class ConfigError(ValueError):
    """A configuration variable is missing or wrong; the message names the variable."""


class Component(StrEnum):
    """Who reads a variable: the tables of `docs/configuration.md`."""

    ACTOR = "actor"  # every actor's function (the sidecar), a Spark actor's dispatcher and collector included
    SPARK = "spark"  # a Spark actor's dispatcher and collector
    CONTAINER = "container"  # a container actor's consumer loop (`python -m asya.consumer`)
    CREW = "crew"  # x-sink, x-sump, x-pause, x-resume
    GATEWAY = "gateway"  # the gateway's API, stream and backstop functions
    LOCAL = "local"  # the local stack's own processes (`asya up`, the tests), never a deployed function


@dataclass(frozen=True)
class Variable(Generic[T]):
    """One variable: `read(env)` gives its typed value, the default when it is unset or empty."""

    name: str
    components: tuple[Component, ...]
    meaning: str
    default: T
    parse: Callable[[str, str], T]  # (name, raw text) -> value, or ConfigError naming the variable
    shown_default: str = ""  # the default as docs/configuration.md shows it

    def read(self, env: Mapping[str, str]) -> T:
        raw = env.get(self.name, "").strip()
        return self.parse(self.name, raw) if raw else self.default

    def require(self, env: Mapping[str, str]) -> T:
        """The value, which must be set."""
        if not env.get(self.name, "").strip():
            raise ConfigError(f"{self.name} is required")
        return self.read(env)

    @property
    def default_text(self) -> str:
        return self.shown_default or ("none" if self.default is None else f"`{self.default}`")


def require_all(env: Mapping[str, str], by: str, *needed: Variable[Any]) -> None:
    """Every variable in `needed` is set, or one `ConfigError` naming all that are not."""
    missing = [variable.name for variable in needed if not env.get(variable.name, "").strip()]
    if missing:
        raise ConfigError(f"{', '.join(missing)} required by {by}")


def _text(_name: str, raw: str) -> str:
    return raw


def _text_or_none(_name: str, raw: str) -> str | None:
    return raw


_NAME = re.compile(ACTOR_NAME)


def listed(raw: str) -> frozenset[str]:
    """The names of a comma-separated variable (`ASYA_JOINED_BY`, `ASYA_FLOW_VERSIONS`)."""
    return frozenset(name.strip() for name in raw.split(",") if name.strip())


def _mesh_name(name: str, raw: str) -> str:
    if not _NAME.match(raw):
        raise ConfigError(
            f"{name}={raw!r} may only contain lower-case letters, digits and '-', starting with a letter or a "
            "digit, as the mesh file's names (it becomes a queue name)"
        )
    return raw


def number(minimum: float, maximum: float | None = None) -> Callable[[str, str], float]:
    def parse(name: str, raw: str) -> float:
        try:
            value = float(raw)
        except ValueError:
            raise ConfigError(f"{name}={raw!r} is not a number") from None
        if value < minimum:
            raise ConfigError(f"{name}={raw!r} must be at least {minimum}")
        if maximum is not None and value > maximum:
            raise ConfigError(f"{name}={raw!r} must be at most {maximum}")
        return value

    return parse


def integer(minimum: int) -> Callable[[str, str], int]:
    as_number = number(minimum)
    return lambda name, raw: int(as_number(name, raw))


def _flag(name: str, raw: str) -> bool:
    value = raw.lower()
    if value not in ("0", "1", "true", "false", "on", "off", "yes", "no"):
        raise ConfigError(f"{name}={raw!r} must be true or false")
    return value in ("1", "true", "on", "yes")


def choice(*choices: str) -> Callable[[str, str], str]:
    def parse(name: str, raw: str) -> str:
        if raw not in choices:
            raise ConfigError(f"{name} must be {' or '.join(repr(option) for option in choices)}, got {raw!r}")
        return raw

    return parse


_ACTOR = (Component.ACTOR,)
_CREW = (Component.CREW,)
_GATEWAY = (Component.GATEWAY,)
_SPARK = (Component.SPARK,)
_CONTAINER = (Component.CONTAINER,)
_LOCAL = (Component.LOCAL,)

# What every function of the mesh names itself by.
NAMESPACE = Variable(
    "ASYA_NAMESPACE",
    (Component.ACTOR, Component.CREW, Component.GATEWAY),
    "the mesh namespace; queues are `asya-<namespace>-<actor>`",
    "",
    _mesh_name,
    "required",
)

# The sidecar (`asya.config.SidecarConfig`).
ACTOR = Variable(
    "ASYA_ACTOR_NAME",
    _ACTOR,
    "this actor's name; envelopes whose `route.curr` differs go to `x-sump`",
    "",
    _mesh_name,
    "required",
)
HANDLER = Variable(
    "ASYA_HANDLER",
    _ACTOR,
    "`module.function` or `module.Class.method` (class created once, no arguments)",
    "",
    _text,
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
    _text,
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
    _text_or_none,
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
    _flag,
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
    _text,
    "none",
)
JOINED_BY = Variable(
    "ASYA_JOINED_BY",
    _ACTOR,
    "the join actors that gather this actor's fan-out branches (those whose `join.branches_of` names it), "
    "comma-separated; its outputs bound for one carry a join frame",
    "",
    _text,
    "none",
)
SECRETS = Variable(
    "ASYA_SECRETS",
    _ACTOR,
    'JSON `{variable: "secretsmanager:<name>" or "ssm:<name>", "#<key>" for one field}`: the mesh file\'s '
    "`secrets`, read at the execution environment's start into those variables (`asya.startup`)",
    "",
    _text,
    "none",
)
FILES = Variable(
    "ASYA_FILES",
    _ACTOR,
    'JSON `{variable: [s3 URL, name, "file" | "zip" | "prefix"]}`: the mesh file\'s `files`, downloaded at '
    "the execution environment's start into its temporary folder, each path in its variable (`asya.startup`)",
    "",
    _text,
    "none",
)
JOIN = Variable(
    "ASYA_JOIN",
    _ACTOR,
    'this actor is a join: JSON of its `join.on_failure`, `"fail_fast"`, `"collect"` or `{"tolerate": 2}` / '
    '`{"tolerate": "10%"}`; it receives its branches\' results as one list',
    "",
    _text,
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
    _text_or_none,
)
EVENTS_TABLE = Variable(
    "ASYA_EVENTS_TABLE",
    (Component.ACTOR, Component.GATEWAY),
    "the live log of watched tasks (FLY events, status changes) the gateway streams",
    None,
    _text_or_none,
)
FLY_DOMAIN = Variable(
    "ASYA_FLY_DOMAIN",
    (Component.ACTOR, Component.GATEWAY),
    "the HTTP domain of the mesh's AppSync Events API, FLY's fast lane (`gateway.fly: channel`): the sidecar "
    "publishes each FLY event there instead of appending it to the live log",
    None,
    _text_or_none,
)
FLY_REALTIME_DOMAIN = Variable(
    "ASYA_FLY_REALTIME_DOMAIN",
    (Component.GATEWAY,),
    "the real-time (WebSocket) domain of the same API: a follow subscribes to its task's channel there",
    None,
    _text_or_none,
)
SUMP_TABLE = Variable(
    "ASYA_SUMP_TABLE",
    (Component.CREW, Component.GATEWAY),
    "the sump table: one item per message x-sump kept, for listing and redriving (x-sump and the gateway)",
    None,
    _text_or_none,
)
JOINS_TABLE = Variable(
    "ASYA_JOINS_TABLE",
    _ACTOR,
    "the joins table (partition key `fan`, sort key `slot`): the branches a join actor is gathering (set on "
    "join actors)",
    None,
    _text_or_none,
)
STATE_TABLE = Variable(
    "ASYA_STATE_TABLE",
    _ACTOR,
    "the actor state table (partition key `key`: `<actor>#<key>`), read and written by `asya.state` (set on "
    "actors with `state:`)",
    None,
    _text_or_none,
)
STATE_BUCKET = Variable(
    "ASYA_STATE_BUCKET",
    _ACTOR,
    "the bucket of state values too large for a state item (`<actor>/...`); unset: such values are refused",
    None,
    _text_or_none,
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
    _text_or_none,
)
IDEMPOTENCY_TTL = Variable(
    "ASYA_IDEMPOTENCY_TTL_SECONDS",
    (Component.ACTOR, Component.CREW),
    "how long a completed hop is remembered; a redelivery later than this runs again",
    3600,
    integer(1),
)
RESULTS_BUCKET = Variable(
    "ASYA_RESULTS_BUCKET",
    (Component.CREW, Component.GATEWAY),
    "the bucket of results and x-sump records (required by the crew)",
    None,
    _text_or_none,
)

# The crew.
SINK_HOOKS = Variable(
    "ASYA_SINK_HOOKS", _CREW, 'JSON `[{"actor": name, "phases": [...]}]`: the mesh\'s `sink_hooks`', "", _text, "`[]`"
)
RESULTS_INLINE_MAX_BYTES = Variable(
    "ASYA_RESULTS_INLINE_MAX_BYTES",
    _CREW,
    "a final payload up to this many bytes of JSON is kept in the task record, not S3 "
    "(`results.inline_max_bytes`); 0: always S3",
    0,
    integer(0),
    "`0` (the mesh sets 4096)",
)
RESULTS_TTL = Variable(
    "ASYA_RESULTS_TTL_SECONDS",
    _CREW,
    "how long results are kept (`results.retention_days`): a task record that holds its result, if longer "
    "than its own TTL, and x-sump's items in the sump table",
    0,
    integer(0),
)

# The gateway.
FLOWS = Variable(
    "ASYA_FLOWS",
    _GATEWAY,
    "JSON `{flow: {route, description, timeout, input_schema}}`: the mesh's flows",
    "",
    _text,
    "`{}`",
)
FLOW_PROGRAMS = Variable(
    "ASYA_FLOW_PROGRAMS",
    _GATEWAY,
    "path of the JSON file `{flow: program}` of the program flows' compiled programs (docs/flows.md)",
    "",
    _text,
    "none",
)
# The longest a gateway request waits for a task's end (`POST /mesh?wait=`, MCP tool calls): API Gateway
# REST ends an integration at 29 s, and the answer still has to be written after the wait.
WAIT_MAX_SECONDS = 25.0
MCP_WAIT = Variable(
    "ASYA_MCP_WAIT_SECONDS",
    _GATEWAY,
    "how long an MCP tool call waits for its task's result before it answers with the task's id (0: not at all)",
    20.0,
    number(0, WAIT_MAX_SECONDS),
)
GATEWAY_AUTH = Variable(
    "ASYA_GATEWAY_AUTH",
    _GATEWAY,
    "JSON `{mode, admins: {scopes, roles, principals}, ownership, public_card, "
    "jwt: {issuer, audiences, hosted_ui, registration}}`: "
    "how callers prove who they are, who sees every task, whose an assumed role's session's tasks are and "
    "what the agent card shows without credentials (the mesh's `gateway.auth`, `gateway.jwt`, "
    "`gateway.admins`, `gateway.ownership`, `gateway.a2a.public_card`)",
    "",
    _text,
    '`{"mode": "iam"}`',
)
GATEWAY_JWKS_URL = Variable(
    "ASYA_GATEWAY_JWKS_URL",
    _GATEWAY,
    "local stack only: where the sign-in issuer's keys (JWKS) are, the local issuer's on loopback; the "
    "deployed gateway finds them through the issuer's OpenID configuration",
    None,
    _text_or_none,
)
GATEWAY_HOSTED_UI_URL = Variable(
    "ASYA_GATEWAY_HOSTED_UI_URL",
    _GATEWAY,
    "local stack only: where the Cognito pool's hosted sign-in (`/oauth2/authorize`, `/oauth2/token`) is "
    "played, by the local issuer on loopback; the deployed gateway names the pool's domain",
    None,
    _text_or_none,
)
GATEWAY_CORS_ORIGINS = Variable(
    "ASYA_GATEWAY_CORS_ORIGINS",
    _GATEWAY,
    "the browser origins allowed to call the gateway, comma-separated (the mesh's `gateway.cors_origins`): "
    "its answers to them carry `Access-Control-Allow-Origin`, and it answers their preflights",
    "",
    _text,
    "none",
)

GATEWAY_CURSOR_SECRET = Variable(
    "ASYA_GATEWAY_CURSOR_SECRET",
    _GATEWAY,
    "the ARN of the Secrets Manager secret the gateway's cursors are sealed with (AES-GCM, a key derived "
    "from it); unset: a key made for this process, whose cursors no other process opens",
    None,
    _text_or_none,
)

SEAL_SECRET = Variable(
    "ASYA_SEAL_SECRET",
    (Component.ACTOR, Component.CREW, Component.GATEWAY),
    "the ARN of the Secrets Manager secret the mesh seals its envelopes with (an HMAC, `asya.seal`): an "
    "envelope without a good seal came from outside the mesh and is admitted as a new task or refused "
    '(docs/security.md, "The queue door"); unset: nothing is sealed and every envelope is trusted',
    None,
    _text_or_none,
)

PUBLIC_URL = Variable(
    "ASYA_PUBLIC_URL",
    _GATEWAY,
    "the base URL the API hands out in links, when it is not the one requests arrive at (a custom domain)",
    None,
    _text_or_none,
    "the request's",
)

# A Spark actor's dispatcher and collector (`asya_spark.settings`), besides the sidecar's.
SPARK_STAGING_BUCKET = Variable(
    "ASYA_SPARK_STAGING_BUCKET",
    _SPARK,
    "where batches are staged (`spark/<ns>/<actor>/<batch>/`)",
    "",
    _text,
    "required",
)
SPARK_BATCHES_TABLE = Variable(
    "ASYA_SPARK_BATCHES_TABLE", _SPARK, "the Spark batches table (batch records, hop claims)", "", _text, "required"
)
SPARK_APPLICATION_ID = Variable(
    "ASYA_SPARK_APPLICATION_ID", _SPARK, "the actor's EMR Serverless application", "", _text, "required"
)
SPARK_JOB_ROLE_ARN = Variable("ASYA_SPARK_JOB_ROLE_ARN", _SPARK, "the job's execution role", "", _text, "required")
SPARK_ENTRY_POINT = Variable(
    "ASYA_SPARK_ENTRY_POINT", _SPARK, "`s3://` URI of `spark_emr/asya_spark_job/entry.py`", "", _text, "required"
)
SPARK_SUBMIT_PARAMETERS = Variable(
    "ASYA_SPARK_SUBMIT_PARAMETERS", _SPARK, "`--py-files`, `--conf` for the job", "", _text, "none"
)
SPARK_STYLE = Variable(
    "ASYA_SPARK_STYLE",
    _SPARK,
    "`payload` or `dataframe`: how the job applies the handler",
    "payload",
    choice("payload", "dataframe"),
)
SPARK_JOB_VARIABLES = Variable(
    "ASYA_SPARK_JOB_VARIABLES",
    _SPARK,
    "comma-separated names of the actor's own variables; the job's handler (`--actor-env`) runs with them and "
    "the sidecar's handler settings, forwarded from the function's own environment, never copied (Lambda's 4 KB)",
    "",
    _text,
    "none",
)
SPARK_JOB_TIMEOUT_MINUTES = Variable(
    "ASYA_SPARK_JOB_TIMEOUT_MINUTES", _SPARK, "the job's execution timeout", 60, integer(1)
)

# A container actor's consumer loop (docs/containers.md).
QUEUE_URL = Variable(
    "ASYA_QUEUE_URL", _CONTAINER, "the URL of the actor's queue, which the consumer long-polls", "", _text, "required"
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

# The local stack.
LOCAL_IAM = Variable(
    "ASYA_LOCAL_IAM",
    _LOCAL,
    "`off` stops the local endpoint enforcing the functions' IAM policies (debugging only)",
    True,
    _flag,
    "`on`",
)
LOCAL_SPEED_PATCHES = Variable(
    "ASYA_LOCAL_SPEED_PATCHES",
    _LOCAL,
    "`off` starts the local endpoint with moto's fidelity patches alone (`make conformance`: judging a new moto)",
    True,
    _flag,
    "`on`",
)
LOCAL_BACKSTOP_SECONDS = Variable(
    "ASYA_LOCAL_BACKSTOP_SECONDS",
    _LOCAL,
    "how often the local stack runs scheduled functions (the gateway's backstop; every minute on AWS)",
    2.0,
    number(0.1),
    "`2`",
)
LOCAL_CONTAINER_COOLDOWN = Variable(
    "ASYA_LOCAL_CONTAINER_COOLDOWN_SECONDS",
    _LOCAL,
    "how long a container actor's queue has nothing visible or in flight before the local stack stops its "
    "consumers (on AWS, its `container.scale_in_cooldown`)",
    60.0,
    number(0.0),
    "`60`",
)
LOCAL_STATE = Variable(
    "ASYA_LOCAL_STATE",
    _LOCAL,
    "the state file of the local stack that `asya up` writes and every other command reads (where the "
    "stack runs, its gateway and API key)",
    None,
    _text_or_none,
    "the nearest `.asya/local.json`, from the current folder up",
)
TOKEN = Variable(
    "ASYA_TOKEN",
    _LOCAL,
    "a bearer token the `asya` commands send a deployed mesh's gateway (`Authorization: Bearer`), for "
    "`gateway.auth: jwt`; `--token` takes its place",
    None,
    _text_or_none,
    "none",
)
CACHE = Variable(
    "ASYA_CACHE",
    _LOCAL,
    "where installed libraries are kept, one folder per distinct set (the layer's, each actor's, for each "
    "platform), by `cdk synth`, `asya check` and `asya up`",
    None,
    _text_or_none,
    "`$XDG_CACHE_HOME/asya-aws` or `~/.cache/asya-aws`",
)

ALL: tuple[Variable[Any], ...] = (
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
    JOIN_MAX_WIDTH,
    SECRETS,
    FILES,
    JOIN,
    TASKS_TABLE,
    EVENTS_TABLE,
    FLY_DOMAIN,
    FLY_REALTIME_DOMAIN,
    SUMP_TABLE,
    JOINS_TABLE,
    STATE_TABLE,
    STATE_BUCKET,
    STATE_TTL_DAYS,
    TASK_TTL,
    IDEMPOTENCY_TABLE,
    IDEMPOTENCY_TTL,
    RESULTS_BUCKET,
    SINK_HOOKS,
    RESULTS_INLINE_MAX_BYTES,
    RESULTS_TTL,
    FLOWS,
    FLOW_PROGRAMS,
    MCP_WAIT,
    GATEWAY_AUTH,
    GATEWAY_JWKS_URL,
    GATEWAY_HOSTED_UI_URL,
    GATEWAY_CORS_ORIGINS,
    GATEWAY_CURSOR_SECRET,
    SEAL_SECRET,
    PUBLIC_URL,
    SPARK_STAGING_BUCKET,
    SPARK_BATCHES_TABLE,
    SPARK_APPLICATION_ID,
    SPARK_JOB_ROLE_ARN,
    SPARK_ENTRY_POINT,
    SPARK_SUBMIT_PARAMETERS,
    SPARK_STYLE,
    SPARK_JOB_VARIABLES,
    SPARK_JOB_TIMEOUT_MINUTES,
    QUEUE_URL,
    CONSUMER_CONCURRENCY,
    CONSUMER_BATCH_SIZE,
    HOP_TIME_LIMIT,
    STOP_GRACE,
    LOCAL_IAM,
    LOCAL_SPEED_PATCHES,
    LOCAL_BACKSTOP_SECONDS,
    LOCAL_CONTAINER_COOLDOWN,
    LOCAL_STATE,
    TOKEN,
    CACHE,
)

"""Every `ASYA_*` variable the mesh's functions read, with its type, default and meaning, under one name.

The CDK app writes a function's environment with these names (`asya_cdk.environment`), each function
reads its settings through them (`SidecarConfig`, `CrewSettings`, `GatewaySettings`, `SparkSettings`),
and `docs/configuration.md` lists them, one table per component, checked against this module by a
test. A variable read here turns into a typed value or a `ConfigError` that names it, so a function
with a bad environment fails at its first invocation with a message that says which variable to fix.

Each component's variables are declared in a module of their own (`asya.actor_variables`,
`asya.spark_variables`, `asya.container_variables`, `asya.crew_variables`, `asya.gateway_variables`,
`asya.local_variables`; the kind of a variable in `asya.env_variable`); this one gathers them, so that
every reader imports them by one name and the documentation test sees them all.
"""

from __future__ import annotations

from typing import Any

from asya.actor_variables import (
    ACTOR,
    ACTOR_TIMEOUT,
    CLAIM_BUCKET,
    CLAIM_CHECK_BYTES,
    EVENTS_TABLE,
    FILES,
    FLOW_VERSIONS,
    FLY_DOMAIN,
    HANDLER,
    HANDLER_MODE,
    IDEMPOTENCY_TABLE,
    IDEMPOTENCY_TTL,
    JOIN,
    JOIN_MAX_WIDTH,
    JOINED_BY,
    JOINS_TABLE,
    LAMBDA_MARGIN,
    MAX_MESSAGE_BYTES,
    NAMESPACE,
    RESILIENCY,
    SEAL_SECRET,
    SECRETS,
    SEND_ATTEMPTS,
    STATE_BUCKET,
    STATE_TABLE,
    STATE_TTL_DAYS,
    STATUS_WRITES,
    TASK_TTL,
    TASKS_TABLE,
    TRACING,
)
from asya.actor_variables import VARIABLES as ACTOR_VARIABLES
from asya.container_variables import CONSUMER_BATCH_SIZE, CONSUMER_CONCURRENCY, HOP_TIME_LIMIT, QUEUE_URL, STOP_GRACE
from asya.container_variables import VARIABLES as CONTAINER_VARIABLES
from asya.crew_variables import RESULTS_BUCKET, RESULTS_INLINE_MAX_BYTES, RESULTS_TTL, SINK_HOOKS, SUMP_TABLE
from asya.crew_variables import VARIABLES as CREW_VARIABLES
from asya.env_variable import PREFIX, Component, ConfigError, Variable, choice, integer, listed, number, require_all
from asya.gateway_variables import (
    FLOW_PROGRAMS,
    FLOWS,
    FLY_REALTIME_DOMAIN,
    GATEWAY_AUTH,
    GATEWAY_CORS_ORIGINS,
    GATEWAY_CURSOR_SECRET,
    GATEWAY_HOSTED_UI_URL,
    GATEWAY_JWKS_URL,
    MCP_WAIT,
    PUBLIC_URL,
    WAIT_MAX_SECONDS,
)
from asya.gateway_variables import VARIABLES as GATEWAY_VARIABLES
from asya.local_variables import (
    CACHE,
    LOCAL_BACKSTOP_SECONDS,
    LOCAL_CONTAINER_COOLDOWN,
    LOCAL_IAM,
    LOCAL_SPEED_PATCHES,
    LOCAL_STATE,
    TOKEN,
)
from asya.local_variables import VARIABLES as LOCAL_VARIABLES
from asya.spark_variables import (
    SPARK_APPLICATION_ID,
    SPARK_BATCHES_TABLE,
    SPARK_ENTRY_POINT,
    SPARK_JOB_ROLE_ARN,
    SPARK_JOB_TIMEOUT_MINUTES,
    SPARK_JOB_VARIABLES,
    SPARK_STAGING_BUCKET,
    SPARK_STYLE,
    SPARK_SUBMIT_PARAMETERS,
)
from asya.spark_variables import VARIABLES as SPARK_VARIABLES

# Every component's variables, in the order of docs/configuration.md's tables.
ALL: tuple[Variable[Any], ...] = (
    *ACTOR_VARIABLES,
    *SPARK_VARIABLES,
    *CONTAINER_VARIABLES,
    *CREW_VARIABLES,
    *GATEWAY_VARIABLES,
    *LOCAL_VARIABLES,
)

# What importers take from here by the one name `asya.variables`: every variable, and the kind of one.
__all__ = [
    "ACTOR",
    "ACTOR_TIMEOUT",
    "ALL",
    "CACHE",
    "CLAIM_BUCKET",
    "CLAIM_CHECK_BYTES",
    "CONSUMER_BATCH_SIZE",
    "CONSUMER_CONCURRENCY",
    "EVENTS_TABLE",
    "FILES",
    "FLOWS",
    "FLOW_PROGRAMS",
    "FLOW_VERSIONS",
    "FLY_DOMAIN",
    "FLY_REALTIME_DOMAIN",
    "GATEWAY_AUTH",
    "GATEWAY_CORS_ORIGINS",
    "GATEWAY_CURSOR_SECRET",
    "GATEWAY_HOSTED_UI_URL",
    "GATEWAY_JWKS_URL",
    "HANDLER",
    "HANDLER_MODE",
    "HOP_TIME_LIMIT",
    "IDEMPOTENCY_TABLE",
    "IDEMPOTENCY_TTL",
    "JOIN",
    "JOINED_BY",
    "JOINS_TABLE",
    "JOIN_MAX_WIDTH",
    "LAMBDA_MARGIN",
    "LOCAL_BACKSTOP_SECONDS",
    "LOCAL_CONTAINER_COOLDOWN",
    "LOCAL_IAM",
    "LOCAL_SPEED_PATCHES",
    "LOCAL_STATE",
    "MAX_MESSAGE_BYTES",
    "MCP_WAIT",
    "NAMESPACE",
    "PREFIX",
    "PUBLIC_URL",
    "QUEUE_URL",
    "RESILIENCY",
    "RESULTS_BUCKET",
    "RESULTS_INLINE_MAX_BYTES",
    "RESULTS_TTL",
    "SEAL_SECRET",
    "SECRETS",
    "SEND_ATTEMPTS",
    "SINK_HOOKS",
    "SPARK_APPLICATION_ID",
    "SPARK_BATCHES_TABLE",
    "SPARK_ENTRY_POINT",
    "SPARK_JOB_ROLE_ARN",
    "SPARK_JOB_TIMEOUT_MINUTES",
    "SPARK_JOB_VARIABLES",
    "SPARK_STAGING_BUCKET",
    "SPARK_STYLE",
    "SPARK_SUBMIT_PARAMETERS",
    "STATE_BUCKET",
    "STATE_TABLE",
    "STATE_TTL_DAYS",
    "STATUS_WRITES",
    "STOP_GRACE",
    "SUMP_TABLE",
    "TASKS_TABLE",
    "TASK_TTL",
    "TOKEN",
    "TRACING",
    "WAIT_MAX_SECONDS",
    "Component",
    "ConfigError",
    "Variable",
    "choice",
    "integer",
    "listed",
    "number",
    "require_all",
]

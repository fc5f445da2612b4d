"""An actor's part of the mesh file (`actors.<name>`): its queue, its function or Spark application,
its join; with what Lambda, SQS and EMR Serverless accept checked field by field, so that a mistake is
named at load, not at deploy."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from asya.container_variables import CONSUMER_BATCH_SIZE
from asya.gathering import widest_fan
from asya.joins import JoinPolicy
from asya.names import ACTOR_NAME
from asya.resiliency import Resiliency, Seconds
from asya.variables import (
    JOIN_MAX_WIDTH,
    PREFIX,
)
from asya_cdk.container_config import CONTAINER_MAX_TIMEOUT, SQS_MAX_VISIBILITY, ContainerConfig
from asya_cdk.limits import LAMBDA_MAX_TIMEOUT, SQS_MAX_CONCURRENCY_RANGE
from asya_cdk.needs import (
    LAMBDA_EPHEMERAL_STORAGE_MB,
    LAMBDA_MAX_LAYERS,
    LAMBDA_RESERVED,
    FileEntry,
    Grant,
    SecretReference,
    VariableName,
    VpcSettings,
    layer_arn_problem,
)

NAME = ACTOR_NAME
ActorName = Annotated[str, Field(pattern=NAME)]
# Lambda's platform lines that reach the function's log group (`LoggingConfig.SystemLogLevel`): at WARN,
# a successful invocation writes none (no platform.start, no platform.report) and a failed one, a timeout
# or a failed init still writes its own; INFO adds a start and a report line per invocation, DEBUG more
SystemLogLevel = Literal["DEBUG", "INFO", "WARN"]
SYSTEM_LOG_LEVEL: SystemLogLevel = "WARN"


class StrictModel(BaseModel):
    """A part of the mesh file: an unknown field is an error, and nothing changes once read."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class SparkConfig(StrictModel):
    """How a `runtime: spark` actor runs: its EMR Serverless application and the job each batch runs.

    The queue's `batch_size` and `batching_window` (on the actor) decide how envelopes are gathered
    into one job; `timeout` stays the per-envelope limit inside the job."""

    style: Literal["payload", "dataframe"] = "payload"
    release: Annotated[str, Field(pattern=r"^emr-\d+\.\d+\.\d+$")] = "emr-7.12.0"
    max_vcpu: int = Field(default=16, ge=1, le=400)
    max_memory_gb: int = Field(default=64, ge=2, le=3000)
    max_disk_gb: int = Field(default=200, ge=20, le=20_000)
    idle_minutes: int = Field(default=15, ge=1, le=10_080)
    job_timeout: Annotated[Seconds, Field(ge=300, le=7 * 86_400)] = 3600.0
    reconcile_minutes: int = Field(default=5, ge=1, le=60)
    python: str = "/usr/bin/python3.11"
    image_uri: str | None = None
    conf: dict[str, str] = Field(default_factory=dict)

    @property
    def job_timeout_minutes(self) -> int:
        return math.ceil(self.job_timeout / 60)


class JoinConfig(StrictModel):
    """A join actor (`asya.joins`, docs/routing.md "Joining branches"): instead of each branch of a
    fan-out by one of `branches_of`, it receives one envelope whose payload is the list of the branches'
    results, in branch order, once every branch has ended. `on_failure` says what failed branches do:
    `fail_fast` (the first fails the join), `{tolerate: n}` or `{tolerate: "p%"}` (that many are left
    out of the list), or `collect` (each stays in the list as its error payload)."""

    branches_of: list[ActorName] = Field(min_length=1)
    on_failure: str | dict[str, Any] = "fail_fast"
    # the widest fan it takes; by default the widest whose reading fits half its function timeout,
    # up to ASYA_JOIN_MAX_WIDTH's default (`ActorConfig.join_width`)
    max_width: int | None = Field(default=None, ge=1, le=100_000)

    @field_validator("branches_of", mode="before", json_schema_input_type=ActorName | list[ActorName])
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("on_failure")
    @classmethod
    def _a_policy(cls, value: Any) -> Any:
        JoinPolicy.of(value)  # the sidecar reads it with the same rules (`ASYA_JOIN`)
        return value


class StateConfig(StrictModel):
    """An actor's durable keys (`asya.state`, docs/actors.md "State"): `state: true`, or these settings.
    `ttl_days`: a key not written for that many days expires (DynamoDB's TTL); unset, keys stay."""

    ttl_days: int | None = Field(default=None, ge=1, le=36_500)


# The dispatcher stages a batch and starts its job; it does not run the handler, so its function
# timeout is its own, not `timeout` (which limits each envelope inside the job).
SPARK_DISPATCH_TIMEOUT = 300.0


BATCH_OVERHEAD = 10.0  # seconds a batch is given beyond its hops': receiving, routing and settling it


def batch_seconds(timeout: float, batch_size: int, most: float) -> float:
    """How long a batch of `batch_size` hops may take in all, each up to its `timeout`: a Lambda
    function's timeout, a container consumer's batch clock. The same sum for both, so a container
    batch of several hops is not cut short where the same batch on Lambda would finish; rounded up to
    whole seconds (Lambda's `Timeout` is an integer), at most `most` (the runtime's own ceiling)."""
    return min(most, float(math.ceil(round(timeout * batch_size + BATCH_OVERHEAD, 6))))


class QueueFunctionConfig(StrictModel):
    """A function fed by a queue of its own, an actor's or the crew's: every knob of the queue, the
    function and the event source between them, and what is derived from them."""

    timeout: Seconds = Field(default=60.0, gt=0, le=LAMBDA_MAX_TIMEOUT)
    function_timeout: Seconds | None = Field(default=None, gt=0, le=LAMBDA_MAX_TIMEOUT)
    memory: int = Field(default=512, ge=128, le=10_240)
    architecture: Literal["arm64", "x86_64"] = "arm64"
    batch_size: int = Field(default=10, ge=1, le=10_000)
    batching_window: Seconds = Field(default=0.0, le=300)
    max_concurrency: int | None = Field(default=None, ge=2, le=1000)
    reserved_concurrency: int | None = Field(default=None, ge=0)  # at least 2: see asya_cdk.rules
    max_receive_count: int = Field(default=5, ge=1, le=1000)
    # bounds in the type, not on the field: `Seconds`' own `ge=0` would replace a field's `ge`
    retention: Annotated[Seconds, Field(ge=60, le=14 * 86_400)] = 4 * 86_400
    tracing: bool = False
    log_retention_days: Literal[1, 3, 7, 14, 30, 90, 180, 365, 731, 1827] = 30
    system_log_level: SystemLogLevel = SYSTEM_LOG_LEVEL

    @model_validator(mode="after")
    def _large_batches_need_a_window(self) -> Self:
        if self.batch_size > 10 and self.batching_window == 0:
            raise ValueError("batch_size above 10 needs a batching_window (an SQS event source rule)")
        return self

    @property
    def lambda_timeout(self) -> float:
        """The function must fit a whole batch: every record up to its own time limit, capped by Lambda;
        derived, it is rounded up to whole seconds (Lambda's `Timeout` is an integer)."""
        if self.function_timeout is not None:
            return self.function_timeout
        return batch_seconds(self.timeout, min(self.batch_size, 10), LAMBDA_MAX_TIMEOUT)

    @property
    def event_source_concurrency(self) -> int | None:
        """The SQS event source's maximum concurrency: `max_concurrency`, or else the function's reserved
        concurrency, so the event source never takes more batches than the function may run (a throttled
        batch still counts as a receive, and enough of them redrive healthy envelopes to x-sump)."""
        if self.max_concurrency is not None or self.reserved_concurrency is None:
            return self.max_concurrency
        return min(self.reserved_concurrency, SQS_MAX_CONCURRENCY_RANGE[1])

    @property
    def visibility_timeout(self) -> float:
        """AWS's rule for queues behind Lambda: at least six times the function timeout."""
        return 6 * self.lambda_timeout


class ActorConfig(QueueFunctionConfig):
    """One actor: its code, its handler, and (from `QueueFunctionConfig`) every knob of its queue,
    function and event source."""

    handler: str
    code: str = "."
    runtime: Literal["lambda", "spark", "container"] = "lambda"
    # a hop's own limit; above Lambda's 15 minutes only on a container (`_hop_fits_its_runtime`)
    timeout: Seconds = Field(default=60.0, gt=0, le=CONTAINER_MAX_TIMEOUT)
    spark: SparkConfig | None = None
    container: ContainerConfig | None = None
    handler_mode: Literal["payload", "envelope"] = "payload"
    resiliency: Resiliency = Field(default_factory=Resiliency)
    environment: dict[str, str] = Field(default_factory=dict)
    idempotency: bool = True
    join: JoinConfig | None = None
    state: StateConfig | None = None
    # What a real actor needs beyond its code (docs/actors.md, "Shipping a real actor"; `asya_cdk.needs`).
    package: Literal["zip", "image"] = "zip"
    requirements: list[str] | None = None
    files: dict[VariableName, FileEntry] = Field(default_factory=dict)
    permissions: list[Grant] = Field(default_factory=list)
    secrets: dict[VariableName, SecretReference] = Field(default_factory=dict)
    vpc: VpcSettings | None = None
    provisioned_concurrency: int | None = Field(default=None, ge=1)
    ephemeral_storage: int | None = Field(
        default=None, ge=LAMBDA_EPHEMERAL_STORAGE_MB[0], le=LAMBDA_EPHEMERAL_STORAGE_MB[1]
    )
    layers: list[str] = Field(default_factory=list, max_length=LAMBDA_MAX_LAYERS - 1)

    @field_validator("requirements")
    @classmethod
    def _requirement_lines(cls, lines: list[str] | None) -> list[str] | None:
        from packaging.requirements import InvalidRequirement, Requirement

        for index, line in enumerate(lines or []):
            try:
                Requirement(line)
            except InvalidRequirement as exc:
                why = str(exc).splitlines()[0]
                raise ValueError(
                    f"[{index}]: {line!r} is not a requirement (PEP 508, e.g. numpy==2.3.1): {why}"
                ) from None
        return lines

    @field_validator("layers")
    @classmethod
    def _layer_arns(cls, layers: list[str]) -> list[str]:
        for index, arn in enumerate(layers):
            problem = layer_arn_problem(arn)
            if problem:
                raise ValueError(f"[{index}]: {problem}")
        return layers

    @field_validator("state", mode="before", json_schema_input_type=bool | StateConfig)
    @classmethod
    def _state_on_or_off(cls, value: Any) -> Any:
        """`state: true` is state with the defaults, `false` none."""
        if value is True:
            return {}
        return None if value is False else value

    @field_validator("handler")
    @classmethod
    def _handler_shape(cls, value: str) -> str:
        parts = value.split(".")
        if len(parts) < 2 or not all(part.isidentifier() for part in parts):
            raise ValueError(f"must be 'module.function' or 'module.Class.method', got {value!r}")
        return value

    @field_validator("environment", "files", "secrets")
    @classmethod
    def _no_reserved_variables(cls, value: dict[str, Any]) -> dict[str, Any]:
        reserved = sorted(
            key for key in value if key.startswith(PREFIX) or key.startswith("AWS_") or key in LAMBDA_RESERVED
        )
        if reserved:
            raise ValueError(
                f"{', '.join(reserved)} are set by the mesh or by Lambda; use the actor's own fields or other names"
            )
        return value

    @model_validator(mode="after")
    def _one_variable_one_meaning(self) -> Self:
        """`environment`, `files` and `secrets` each set the handler's variables: a name set twice would
        leave one of them unseen."""
        fields: dict[str, set[str]] = {
            "environment": set(self.environment),
            "files": set(self.files),
            "secrets": set(self.secrets),
        }
        for field, variables in fields.items():
            for other, other_variables in fields.items():
                if field < other and variables & other_variables:
                    shared = ", ".join(sorted(variables & other_variables))
                    raise ValueError(f"{other}: {shared} also in {field}; a variable has one source")
        return self

    @model_validator(mode="after")
    def _lambda_settings_need_lambda(self) -> Self:
        """A Spark actor's handler runs in its EMR Serverless job: what only a Lambda function has is an
        error there. An image function has no layers: what a layer would bring goes into the image."""
        if self.runtime == "spark":
            lambda_only = {
                "package": self.package != "zip",
                "files": bool(self.files),
                "secrets": bool(self.secrets),
                "vpc": self.vpc is not None,
                "provisioned_concurrency": self.provisioned_concurrency is not None,
                "ephemeral_storage": self.ephemeral_storage is not None,
                "layers": bool(self.layers),
                "state": self.state is not None,
            }
            for field, set_here in lambda_only.items():
                if set_here:
                    raise ValueError(
                        f"{field}: for Lambda actors; a Spark actor's handler runs in its EMR Serverless job "
                        "(its libraries: requirements; its grants: permissions, given to the job's role)"
                    )
        if self.package == "image" and self.layers:
            raise ValueError(
                "layers: a container image function has no layers; declare what they bring as requirements"
            )
        if (
            self.provisioned_concurrency is not None
            and self.reserved_concurrency is not None
            and self.provisioned_concurrency > self.reserved_concurrency
        ):
            raise ValueError(
                f"provisioned_concurrency: {self.provisioned_concurrency} is above reserved_concurrency "
                f"{self.reserved_concurrency}; Lambda refuses more warm environments than the function may run"
            )
        return self

    @model_validator(mode="after")
    def _container_settings_need_a_container(self) -> ActorConfig:
        """A container actor runs the image a `package: image` actor gets, in an ECS service in the
        actor's VPC: what only a Lambda function has is an error there, and so is a missing `vpc` (a
        task needs subnets, and looking up a default VPC would break an offline synth)."""
        if self.container is not None and self.runtime != "container":
            raise ValueError("container: settings for a container actor; set runtime: container, or remove them")
        if self.runtime != "container":
            return self
        if self.container is None:
            object.__setattr__(self, "container", ContainerConfig())
        lambda_only = {
            "package": "package" in self.model_fields_set and self.package != "image",
            "memory": "memory" in self.model_fields_set,
            "function_timeout": self.function_timeout is not None,
            "reserved_concurrency": self.reserved_concurrency is not None,
            "max_concurrency": self.max_concurrency is not None,
            "provisioned_concurrency": self.provisioned_concurrency is not None,
            "ephemeral_storage": self.ephemeral_storage is not None,
            "layers": bool(self.layers),
            "system_log_level": "system_log_level" in self.model_fields_set,
        }
        for field, set_here in lambda_only.items():
            if set_here:
                raise ValueError(
                    f"{field}: for Lambda actors; a container actor runs its image in ECS tasks sized by "
                    "container.cpu, container.memory and container.gpu, concurrency container.concurrency"
                )
        if self.batch_size > 10:
            raise ValueError("batch_size: a container actor receives at most 10 messages at a time (SQS's maximum)")
        if self.timeout < 1:
            raise ValueError(f"timeout: {self.timeout:g} s; a container hop's limit is at least 1 s")
        if self.vpc is None:
            raise ValueError("vpc: a container actor's tasks run in subnets of yours; give subnets and security_groups")
        assert self.container is not None
        if self.container_batch_time + self.container.visibility > SQS_MAX_VISIBILITY:
            raise ValueError(
                f"timeout: a batch of {self.consumer_batch_size} may take {self.container_batch_time:g} s (timeout "
                f"times batch_size, and {BATCH_OVERHEAD:g} s), which with container.visibility "
                f"{self.container.visibility:g} s passes SQS's {SQS_MAX_VISIBILITY:g} s: a message's visibility cannot "
                "be extended past 12 hours from its receipt, so the hop would be delivered again while it runs; "
                "lower timeout, batch_size or container.visibility"
            )
        if self.container.gpu and self.architecture != "x86_64":
            raise ValueError("architecture: a GPU task runs on ECS's GPU-optimized AMI, which is x86_64 only")
        object.__setattr__(self, "package", "image")
        return self

    @model_validator(mode="after")
    def _hop_fits_its_runtime(self) -> ActorConfig:
        if self.runtime != "container" and self.timeout > LAMBDA_MAX_TIMEOUT:
            raise ValueError(
                f"timeout: {self.timeout:g} s is above Lambda's {LAMBDA_MAX_TIMEOUT:g}; a longer hop needs runtime: "
                "container"
            )
        return self

    @model_validator(mode="after")
    def _spark_settings_need_spark(self) -> ActorConfig:
        if self.spark is not None and self.runtime != "spark":
            raise ValueError("spark: settings for a Spark actor; set runtime: spark, or remove them")
        if self.runtime == "spark" and self.spark is None:
            object.__setattr__(self, "spark", SparkConfig())
        if self.runtime == "spark" and self.join is not None:
            raise ValueError(
                "join: a Spark actor cannot be a join (its dispatcher does not gather branches); "
                "join in a Lambda actor, which may then send the list on to this one"
            )
        return self

    @property
    def join_width(self) -> int:
        """The widest fan a join takes: `join.max_width`, or else the widest whose completing arrival
        reads it back within half the batch's time (`batch_time`, `rules.join_width_problems`), at most
        `JOIN_MAX_WIDTH`'s default. 0 for an actor that is not a join."""
        if self.join is None:
            return 0
        return self.join.max_width or widest_fan(self.batch_time / 2, JOIN_MAX_WIDTH.default)

    @property
    def lambda_timeout(self) -> float:
        """A Spark actor's function is its dispatcher, whose timeout is its own (see
        `SPARK_DISPATCH_TIMEOUT`); a Lambda actor's fits its batch."""
        if self.runtime == "spark" and self.function_timeout is None:
            return SPARK_DISPATCH_TIMEOUT
        return super().lambda_timeout

    @property
    def consumer_batch_size(self) -> int:
        """Messages a container actor's consumer receives and runs at a time: `batch_size` when the file
        sets it, else the consumer's own default (1), not the 10 of Lambda's event source."""
        return self.batch_size if "batch_size" in self.model_fields_set else CONSUMER_BATCH_SIZE.default

    @property
    def container_batch_time(self) -> float:
        """A container batch's clock (`ASYA_HOP_TIME_LIMIT_SECONDS`): what a Lambda actor's function
        timeout would be for the consumer's batch, up to SQS's 12 hours."""
        return batch_seconds(self.timeout, self.consumer_batch_size, CONTAINER_MAX_TIMEOUT)

    @property
    def batch_time(self) -> float:
        """The time one delivery's batch has: a container batch's clock, or the function's timeout."""
        return self.container_batch_time if self.runtime == "container" else self.lambda_timeout

    @property
    def visibility_timeout(self) -> float:
        """A container actor's consumer keeps a message hidden by heartbeats, `container.visibility` at
        a time; behind Lambda, six times the function timeout."""
        if self.container is not None:
            return self.container.visibility
        return super().visibility_timeout


# The crew's queues and functions (its handlers are asya_crew.sink, .sump, .pause, .resume). 5 s per
# record (an S3 write, a status write, a send) makes a 60 s function and a 6-minute visibility
# timeout: a crew record left for redelivery (a write that failed after botocore's retries) comes back
# in minutes, where 30 s per record kept it away for half an hour.
CREW_SETTINGS = QueueFunctionConfig(timeout=5, batch_size=10, max_receive_count=5)

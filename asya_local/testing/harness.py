"""A mesh file run in one process, for a user's tests: `with MeshHarness("mesh.yaml") as mesh:
run = mesh.run("flow", payload)`.

Everything a task meets on AWS between the gateway and x-sink runs here as the deployed functions
run it, from the variables the CDK app gives them (`asya_cdk.environment`): the gateway's task
service creates the task (input schema, program start, task record), each actor's sidecar runs the
user's handler with the actor's variables, secrets and files in its environment, and the crew
functions end the task and keep its result. Queues are moto's, in memory, with the visibility timeouts
and dead-letter queues the CDK app gives them; waits pass in no time (`queue_clock`). No endpoint,
no processes: a flow runs in well under a second, so it fits a unit test.

What this leaves to the local stack: Spark actors (they run on EMR Serverless), the libraries and
files a function ships (here the test's own virtualenv imports the handlers), the deadline backstop
and watchers' event streams, IAM, and the gateway's HTTP doors (REST, MCP, A2A, sign-in).
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from secrets import token_urlsafe
from typing import Any, TypedDict, Unpack

import boto3

from asya.names import CREW, GATEWAY, PAUSE, RESUME, SINK, SUMP, SUMP_DEAD_LETTERS, resource_name
from asya.startup import prepare
from asya.variables import FLOW_PROGRAMS
from asya_cdk.actor_config import CREW_SETTINGS, QueueFunctionConfig
from asya_cdk.environment import MeshNames, crew_environment, gateway_environment, lambda_actor_environment
from asya_cdk.loaded_mesh import LoadedMesh
from asya_cdk.loading import load_mesh
from asya_crew import pause, resume, sink, sump
from asya_crew.crew import CrewSettings, Decide, crew_actor
from asya_gateway.service import TaskService
from asya_gateway.settings import GatewaySettings
from asya_gateway.task_error import TaskError
from asya_local.fixtures import fill_buckets, named_secrets, read_values, secrets_file, store_secret
from asya_local.functions.lambda_shapes import ACCOUNT, REGION, LambdaContext
from asya_local.testing.flow_run import FlowRun, of_task
from asya_local.testing.inprocess import Function, InProcessMesh
from asya_local.testing.tables import (
    EVENTS,
    JOINS,
    TASKS,
    create_idempotency_table,
    create_state_table,
    create_tables,
)
from asya_local.testing.tables import SUMP as SUMP_TABLE

BUCKET = "asya-harness-results"
SEAL_SECRET = "asya-harness-seal"  # what the mesh seals its envelopes with (`asya.seal`)
IDEMPOTENCY = "asya-hops"
STATE_TABLE = "asya-actor-state"  # the keys of the actors with `state:` (`asya.state`)
STATE_BUCKET = "asya-harness-state"
__all__ = ["HarnessError", "MeshHarness", "TaskError"]  # TaskError: a create the gateway refuses
DECIDERS: dict[str, Callable[[CrewSettings], Decide]] = {
    SINK: sink.decider,
    SUMP: sump.decider,
    PAUSE: pause.decider,
    RESUME: resume.decider,
}


class TaskOptions(TypedDict, total=False):
    """What a create may say besides the flow and payload, as `POST /mesh`'s body does."""

    route: list[str]  # instead of a flow: the actors, in order
    headers: dict[str, Any]
    timeout: float  # seconds: the task's deadline, instead of its flow's


class HarnessError(RuntimeError):
    """The mesh file asks for something the in-process mesh cannot run; the message says what."""


class MeshHarness(InProcessMesh):
    """`mesh`: a mesh file's path or a loaded mesh; `secrets`: each secret's value, by the name the
    mesh file gives it (a secret read by `key` takes a JSON object), over the local secrets file's;
    `environment`: variables to set or replace, by actor, over its mesh file's."""

    def __init__(
        self,
        mesh: str | Path | LoadedMesh = "mesh.yaml",
        *,
        secrets: Mapping[str, str] | None = None,
        environment: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        self.mesh = mesh if isinstance(mesh, LoadedMesh) else load_mesh(mesh)
        config = self.mesh.config
        spark = self.mesh.spark_actors
        if spark:
            raise HarnessError(
                f"actors.{spark[0]}: a Spark actor runs on EMR Serverless, not in this process; "
                "test its flows on the local stack (the asya_stack fixture)"
            )
        self.secrets = dict(secrets or {})
        self.names = MeshNames(
            bucket=BUCKET,
            tasks_table=TASKS,
            events_table=EVENTS,
            idempotency_table=IDEMPOTENCY,
            batches_table="",
            sump_table=SUMP_TABLE,
            joins_table=JOINS if self.mesh.joins else "",
            state_table=STATE_TABLE if self.mesh.stateful else "",
            state_bucket=STATE_BUCKET if self.mesh.stateful else "",
        )
        self._folder = tempfile.TemporaryDirectory(prefix="asya-harness-")
        self._overrides = {actor: dict(variables) for actor, variables in (environment or {}).items()}
        self._variables: dict[str, dict[str, str]] = {}  # each actor's, once its files are in the bucket
        super().__init__(
            config.namespace,
            {actor: settings.handler for actor, settings in config.actors.items()},
            queues=self._queue_attributes(),
        )
        self.service: TaskService | None = None
        self._paths: list[str] = []
        self._region = process_environment({"AWS_DEFAULT_REGION": REGION, "AWS_REGION": REGION})

    # -- starting -------------------------------------------------------------------------------------

    def __enter__(self) -> MeshHarness:
        self._region.__enter__()
        self._paths = [str(self.mesh.code_dir(actor)) for actor in self.mesh.config.actors]
        sys.path[:0] = [path for path in dict.fromkeys(self._paths) if path not in sys.path]
        self._forget_other_modules()
        try:
            super().__enter__()
            self.service = TaskService(GatewaySettings.from_env(self._gateway_environment()))
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        super().__exit__(*exc)
        for path in dict.fromkeys(self._paths):
            if path in sys.path:
                sys.path.remove(path)
        self._region.__exit__(None, None, None)
        self._folder.cleanup()

    def _forget_other_modules(self) -> None:
        """A handler's module imported before from another folder (another mesh's `actors`, say) is
        forgotten, so that each actor runs the module of its own code folder. Two actors whose code
        folders hold modules of one name cannot both run in one process: the first folder's wins."""
        for actor, settings in self.mesh.config.actors.items():
            top = settings.handler.split(".", 1)[0]
            module = sys.modules.get(top)
            where = getattr(module, "__file__", None)
            if module is not None and where is not None and not Path(where).is_relative_to(self.mesh.code_dir(actor)):
                for name in [name for name in sys.modules if name == top or name.startswith(f"{top}.")]:
                    del sys.modules[name]

    def provision(self) -> None:
        """The tables and bucket the mesh's functions write, its secrets, its actors' files, the user's
        buckets it stands in for (`local.buckets`), and the crew's functions."""
        dynamodb = boto3.client("dynamodb")
        create_tables(dynamodb)
        create_idempotency_table(dynamodb, IDEMPOTENCY)
        boto3.client("s3").create_bucket(Bucket=BUCKET)
        if self.mesh.stateful:
            create_state_table(dynamodb, STATE_TABLE)
            boto3.client("s3").create_bucket(Bucket=STATE_BUCKET)
        seal = boto3.client("secretsmanager").create_secret(Name=SEAL_SECRET, SecretString=token_urlsafe(48))
        self.names = dataclasses.replace(self.names, seal_secret=seal["ARN"])  # envelopes sealed as deployed
        self._put_secrets()
        fill_buckets(self.mesh, boto3.client("s3"))
        for name in CREW:
            self.functions[name] = crew_actor(
                name, DECIDERS[name], crew_environment(self.mesh, self.names, name)
            ).handle
        for actor in self.mesh.config.actors:
            files = self.mesh.file_sources(actor, self._shipped_file)
            variables = lambda_actor_environment(self.mesh, actor, self.names, files)
            self._variables[actor] = {**variables, **self._overrides.get(actor, {})}

    def actor_function(self, actor: str, variables: dict[str, str]) -> Function:
        """The actor's sidecar, made and run with the actor's variables in the process environment,
        as its own function would have them, secrets and files fetched as its start fetches them."""
        own = {**self._variables[actor], **variables}
        with process_environment(own):
            prepare(own)
        with process_environment(own):
            handle = super().actor_function(actor, own)

        def run(event: dict[str, Any], context: Any) -> dict[str, Any]:
            with process_environment(own):
                return handle(event, context)

        return run

    def context(self, actor: str) -> LambdaContext:
        settings = self.mesh.config.actors.get(actor)
        timeout = (settings or CREW_SETTINGS).lambda_timeout
        return LambdaContext(resource_name(self.namespace, actor), timeout_seconds=timeout)

    # -- running --------------------------------------------------------------------------------------

    def start(self, flow: str | None = None, payload: Any = None, **given: Unpack[TaskOptions]) -> str:
        """Create a task as `POST /mesh` does (a flow by name, or a `route`), without running it; its
        id. A refusal (an unknown flow, an input its schema refuses) raises the gateway's `TaskError`,
        with the HTTP status the API would answer."""
        return self._service.create(payload=payload, flow=flow, **given).task_id

    def run(self, flow: str | None = None, payload: Any = None, **given: Unpack[TaskOptions]) -> FlowRun:
        """Create a task, run the mesh until every queue is empty, and say what the task did."""
        task_id = self.start(flow, payload, **given)
        self.run_until_idle()
        return self.run_of(task_id)

    def resume(self, task_id: str, given: dict[str, Any]) -> FlowRun:
        """Give a paused task what it asked for (`POST /mesh/{id}/resume`) and run it on."""
        self._service.resume(task_id, given)
        self.run_until_idle()
        return self.run_of(task_id)

    def cancel(self, task_id: str) -> FlowRun:
        """Cancel a task and its branches (`POST /mesh/{id}/cancel`), then let the mesh settle."""
        self._service.cancel(task_id)
        self.run_until_idle()
        return self.run_of(task_id)

    def run_of(self, task_id: str) -> FlowRun:
        """The task as it stands now, and everything of it delivered so far."""
        _, task = self._service.wait(task_id, 0)
        branches = tuple(self._service.view(branch) for branch in task.get("branch_ids", []))
        deliveries = tuple(delivery for delivery in self.deliveries if of_task(task_id, delivery))
        return FlowRun(task, deliveries, branches)

    # -- what the functions are given -----------------------------------------------------------------

    @property
    def _service(self) -> TaskService:
        if self.service is None:
            raise HarnessError("the mesh is not started: use it in a `with` block")
        return self.service

    def _queue_attributes(self) -> dict[str, dict[str, str]]:
        """Each queue as the CDK app makes it: x-sump's dead letters first, then x-sump, whose queue is
        every other queue's dead-letter queue, after `max_receive_count` receives."""
        sump_arn = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{resource_name(self.mesh.config.namespace, SUMP)}"

        def attributes(settings: QueueFunctionConfig, dead_letters: str | None) -> dict[str, str]:
            shown = {"VisibilityTimeout": str(int(settings.visibility_timeout))}
            if dead_letters is not None:
                policy = {"deadLetterTargetArn": dead_letters, "maxReceiveCount": settings.max_receive_count}
                shown["RedrivePolicy"] = json.dumps(policy)
            return shown

        dlq = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{resource_name(self.mesh.config.namespace, SUMP_DEAD_LETTERS)}"
        queues = {SUMP_DEAD_LETTERS: {}, SUMP: attributes(CREW_SETTINGS, dlq)}
        queues.update({name: attributes(CREW_SETTINGS, sump_arn) for name in CREW if name != SUMP})
        queues.update({name: attributes(actor, sump_arn) for name, actor in self.mesh.config.actors.items()})
        return queues

    def _gateway_environment(self) -> dict[str, str]:
        variables = gateway_environment(self.mesh, self.names, GATEWAY)
        if FLOW_PROGRAMS.name in variables:  # the build puts the file beside the gateway's code; here, apart
            programs = Path(self._folder.name) / "flow_programs.json"
            programs.write_text(self.mesh.programs_json())
            variables[FLOW_PROGRAMS.name] = str(programs)
        return variables

    def _put_secrets(self) -> None:
        """Each secret an actor reads, its value from `secrets=` or else the local secrets file (the one
        `asya secrets set` writes, as the local stack does)."""
        values = {**read_values(secrets_file(self.mesh)), **self.secrets}
        for named in named_secrets(self.mesh):
            name = named.reference.name
            if name not in values:
                raise HarnessError(
                    f"{named.field}: no value for {name!r}; give it in `secrets=` (the asya_secrets fixture) "
                    f"or set one with `asya secrets set {name}`"
                )
            store_secret(boto3.client("secretsmanager"), boto3.client("ssm"), named.reference, values[name])

    def _shipped_file(self, variable: str, path: Path) -> str:
        """Where the actor's start finds a local file of the mesh file: put in the bucket, a folder
        zipped, as the CDK app ships it as an asset."""
        key = f"files/{variable}/{path.name}"
        if path.is_dir():
            buffer = io.BytesIO()
            with zipfile.ZipFile(buffer, "w") as archive:
                for file in sorted(path.rglob("*")):
                    if file.is_file():
                        archive.write(file, file.relative_to(path).as_posix())
            body = buffer.getvalue()
            key += ".zip"
        else:
            body = path.read_bytes()
        boto3.client("s3").put_object(Bucket=BUCKET, Key=key, Body=body)
        return f"s3://{BUCKET}/{key}"


@contextmanager
def process_environment(variables: Mapping[str, str]) -> Iterator[None]:
    """These variables set in `os.environ` while the block runs, and the environment as it was after."""
    before = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

"""The local stack: the whole mesh on this machine, against a local AWS endpoint.

1. A moto server on loopback, in a process of its own, is the AWS endpoint (`asya_local.endpoint`:
   the server and the fixes it needs to behave as AWS does).
2. The mesh's CDK stack is synthesized and deployed into it (`asya_local.deploy`), and what it made is
   read back (`asya_local.deployed_functions`).
3. Every deployed function gets a worker process per thing that invokes it on AWS
   (`asya_local.functions`), which invokes the real handler with the function's deployed
   environment and temporary credentials of its own execution role (`asya_local.roles`; the
   endpoint enforces IAM): an SQS event source mapping (`esm`), a DynamoDB stream mapping
   (`stream_poller`), a schedule rule (`scheduler`), a REST API integration (`gateway_server`, on
   `gateway_url`, behind `api_key`; with `gateway.auth: jwt`, behind tokens of the local issuer
   instead, `asya_local.issuer`).
4. Spark actors' job runs, started by their dispatchers through moto's EMR Serverless API, run in
   Spark local mode with the same entry script, in the endpoint's process
   (`asya_local.endpoint.spark_runner`).

Workers are separate processes, like Lambda execution environments (`asya_local.worker_processes`).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import secrets
import socket
import tempfile
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from asya import variables
from asya.cors import parse_origins
from asya.names import resource_name
from asya.variables import FLOW_PROGRAMS
from asya_cdk.environment import PROGRAMS_FILE
from asya_cdk.loaded_mesh import LoadedMesh
from asya_cdk.packaging import refuse_oversized_functions
from asya_cdk.plan import STACK_BUDGET
from asya_local import admin_key
from asya_local.cognito_pools import pool_client, pool_clients
from asya_local.container_actors import container_actors, container_scaling
from asya_local.container_counts import service_places
from asya_local.container_scaling import Scaler, start_scaler
from asya_local.deploy import (
    EMR_APPLICATION,
    Synthesized,
    publish_assets,
    refuse_oversized_environments,
    synthesize,
)
from asya_local.deploy import deploy as create_stack
from asya_local.deployed_functions import (
    ContainerTrigger,
    HttpTrigger,
    LocalFunction,
    QueueTrigger,
    ScheduleTrigger,
    StreamTrigger,
    deployed_functions,
    take_over_event_sources,
)
from asya_local.endpoint.process import LocalEndpoint, endpoint_admin, free_port
from asya_local.fixtures import fill_buckets, local_secret_values, store_secrets
from asya_local.functions.faults import FaultSpec
from asya_local.functions.lambda_shapes import REGION
from asya_local.functions.stage_throttle import (
    template_opens_well_known,
    template_route_throttles,
    template_throttle,
)
from asya_local.gateway_client import GatewayClient
from asya_local.hosted_sign_in import HostedSignIn
from asya_local.issuer import IssuerServer, LocalIssuer, PoolClient, local_gateway
from asya_local.queues import Busy, open_spark_batches, queue_depths, wait_until_idle
from asya_local.results import KeptResults
from asya_local.roles import ECS_TASKS, LAMBDA, local_client, role_environment, role_permits
from asya_local.runtime import FunctionPython, LocalPythons
from asya_local.task_agent import TaskAgent
from asya_local.worker_processes import WORKERS, WorkerProcesses

# Which workers a fault spec's `restart_every` names.
RESTARTED = {"gateway": HttpTrigger, "stream": StreamTrigger, "schedule": ScheduleTrigger}
GATEWAY_START_SECONDS = 60.0


def backstop_seconds() -> float:
    """How often scheduled functions run locally (`ASYA_LOCAL_BACKSTOP_SECONDS`, default 2)."""
    return variables.LOCAL_BACKSTOP_SECONDS.read(os.environ)


@dataclass
class LocalStack:
    """`with LocalStack(mesh) as stack:` — the mesh runs until the block ends."""

    mesh: LoadedMesh
    port: int = 4566
    workers_per_function: int = 1
    on_line: Callable[[str, str], None] = lambda _source, _line: None
    gateway_port: int = field(default_factory=free_port)
    api_key: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    schedule_seconds: float = field(default_factory=backstop_seconds)
    faults: FaultSpec | None = None  # applied to the workers only
    stack_name: str = ""  # the CloudFormation stack, once deployed
    outputs: dict[str, str] = field(default_factory=dict)
    functions: list[LocalFunction] = field(default_factory=list)
    _endpoint: LocalEndpoint | None = None  # None while the stack deploys into an endpoint it did not start
    _runs_spark: bool = False  # the stack has Spark actors: the process's Spark runner serves it
    _local_pythons: LocalPythons | None = None  # made before the first worker
    _clients: dict[str, Any] = field(default_factory=dict)
    issuer: LocalIssuer | None = None  # the local issuer, when the mesh has sign-in (`gateway.auth: jwt`)
    gateway_auth: dict[str, Any] = field(default_factory=dict)  # the API function's ASYA_GATEWAY_AUTH
    throttle: dict[str, float] | None = None  # the API stage's, which the local gateway applies
    route_throttles: dict[str, dict[str, float]] = field(default_factory=dict)  # routes throttled apart
    well_known_open: bool = True  # whether the API has its open `GET /.well-known/{proxy+}`
    # browser origins the local gateway allows besides the mesh's `gateway.cors_origins`: `asya up`'s
    # console, whose task pages follow a task straight from the gateway with a follow ticket
    browser_origins: tuple[str, ...] = ()
    _issuer_server: IssuerServer | None = None
    _scaler: Scaler | None = None  # starts and stops container actors' consumers, once workers start
    # What outlives a worker but not the stack: the stream pollers' checkpoints, the synthesized app.
    _state: tempfile.TemporaryDirectory[str] = field(
        default_factory=lambda: tempfile.TemporaryDirectory(prefix="asya-state-")
    )
    _running: WorkerProcesses = field(init=False)

    def __post_init__(self) -> None:
        self._running = WorkerProcesses(
            self.on_line, self.worker_spec, self._python, self._source, Path(self._state.name), self.faults
        )

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def gateway_url(self) -> str | None:
        """Where the REST API is served (`x-api-key: <api_key>`); None if the stack deploys none."""
        serves = any(isinstance(function.trigger, HttpTrigger) for function in self.functions)
        return f"http://127.0.0.1:{self.gateway_port}" if serves else None

    @property
    def namespace(self) -> str:
        return self.mesh.config.namespace

    @property
    def results_bucket(self) -> str:
        return self.outputs["ResultsBucket"]

    @property
    def sump_table(self) -> str | None:
        """Where x-sump lists what it keeps, as its function's environment says."""
        tables = (f.environment.get(variables.SUMP_TABLE.name) for f in self.functions)
        return next((table for table in tables if table), None)

    def kept_results(self) -> KeptResults:
        """What the crew kept: S3 objects, and results held by task records."""
        return KeptResults(
            self.client("s3"),
            self.results_bucket,
            self.namespace,
            self.client("dynamodb"),
            self.outputs.get("TasksTable"),
        )

    def client(self, service: str) -> Any:
        """The administrator's client, made once per service (clients are thread-safe, and slow to make)."""
        if service not in self._clients:
            self._clients[service] = local_client(service, self.endpoint)
        return self._clients[service]

    def __enter__(self) -> LocalStack:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self, progress: Callable[[str], None] = lambda _step: None) -> None:
        """All three steps for the mesh's own stack; `stop` undoes whatever had started if one fails.
        Into an endpoint started elsewhere, call `deploy` and `start_workers` instead."""
        try:
            progress("measuring each function against Lambda's size limit")
            refuse_oversized_functions(self.mesh)
            local_secret_values(self.mesh)
            self.start_endpoint(progress)
            progress("synthesizing the CDK app")
            self.deploy(self.synthesize(), progress)
            self.start_workers(progress)
        except BaseException:
            self.stop()
            raise

    def synthesize(self, stack_budget: int = STACK_BUDGET) -> Synthesized:
        """The mesh's app synthesized into the stack's own folder, which goes with the stack: every start
        left its `cdk.out` (some megabytes) in the system's temporary folder. `stack_budget` as
        `MeshStack` takes it."""
        return synthesize(self.mesh, Path(self._state.name) / "cdk.out", stack_budget)

    def start_endpoint(self, progress: Callable[[str], None] = lambda _step: None) -> None:
        progress(f"starting the local AWS endpoint on {self.endpoint}")
        self._endpoint = LocalEndpoint(self.port, on_line=self.on_line)
        self._endpoint.start()

    def deploy(self, synthesized: Synthesized, progress: Callable[[str], None] = lambda _step: None) -> None:
        """Deploy a synthesized stack into the endpoint and read back what the workers will run."""
        progress(f"deploying stack {synthesized.stack_name}")
        # Queue policies, alarms, API stages have no local effect; moto says so once per resource otherwise.
        warnings.filterwarnings("ignore", message="Tried to parse AWS::", category=UserWarning)
        publish_assets(self.client("s3"), synthesized)
        self._runs_spark = any(
            r["Type"] == EMR_APPLICATION for template in synthesized.templates for r in template["Resources"].values()
        )
        if self._runs_spark:
            code = {key: str(path) for key, path in synthesized.code_dirs.items()}
            libraries = {name: [str(p) for p in paths] for name, paths in self._pythons().spark_jobs().items()}
            endpoint_admin(self.endpoint, "spark-code", {"code": code, "libraries": libraries})
        self.stack_name = synthesized.stack_name
        self.outputs = create_stack(
            self.client("cloudformation"),
            synthesized,
            self.client("emr-serverless"),
            s3=self.client("s3"),
            cognito=self.client("cognito-idp"),
            secretsmanager=self.client("secretsmanager"),
            served={"ApiUrl": f"http://127.0.0.1:{self.gateway_port}"},
            endpoint=self.endpoint,
        )
        refuse_oversized_environments(self.client("lambda"), synthesized)
        fill_buckets(self.mesh, self.client("s3"))
        store_secrets(self.mesh, self.client("secretsmanager"), self.client("ssm"))
        self.functions = deployed_functions(self.client, synthesized)
        self.functions += container_actors(self.client, synthesized, functools.partial(container_scaling, self.mesh))
        self.throttle = template_throttle(synthesized.templates)
        self.route_throttles = template_route_throttles(synthesized.templates)
        self.well_known_open = template_opens_well_known(synthesized.templates)
        take_over_event_sources(self.client("lambda"))
        if len({f.name for f in self.functions if isinstance(f.trigger, HttpTrigger)}) > 1:
            raise RuntimeError("the local stack serves one REST API function; this stack integrates several")
        self._start_issuer()

    def _start_issuer(self) -> None:
        """With sign-in, the local issuer plays the one the deployed API function trusts (its issuer, as
        its environment says: the mesh file's, or the Cognito pool's), with a key pair of the stack's."""
        api = next((f for f in self.functions if isinstance(f.trigger, HttpTrigger)), None)
        raw = api.environment.get(variables.GATEWAY_AUTH.name, "") if api is not None else ""
        self.gateway_auth = json.loads(raw) if raw else {}
        if self.gateway_auth.get("mode") == "jwt":
            pool = self.outputs.get("UserPoolId")  # the pool's clients: the local issuer mints what it would
            cognito = self.client("cognito-idp")
            clients = [PoolClient.of(c) for c in pool_clients(cognito, pool)] if pool else []
            self.issuer = LocalIssuer.create(Path(self._state.name), self.gateway_auth, clients)
            # the pool's hosted sign-in, for any of its clients (those MCP hosts register later too)
            sign_in = HostedSignIn(self.issuer, functools.partial(pool_client, cognito, pool)) if pool else None
            self._issuer_server = IssuerServer(self.issuer, sign_in=sign_in)

    def gateway_client(self) -> GatewayClient:
        """A client of the gateway as the stack's own tools use it (the API key, or an admin's token)."""
        assert self.gateway_url is not None, "the stack serves no gateway"
        return local_gateway(self.gateway_url, self.api_key, self.issuer)

    def _pythons(self) -> LocalPythons:
        """Every function's import path, made (libraries installed, or found in the cache) once."""
        if self._local_pythons is None:
            self._local_pythons = LocalPythons(self.mesh)
        return self._local_pythons

    def start_workers(self, progress: Callable[[str], None] = lambda _step: None) -> None:
        """Event consumers first, then the API, which is waited for: the stack is up once it answers."""
        progress("preparing each function's libraries")
        self._pythons()
        progress(f"starting workers for {len(self.functions)} function triggers")
        containers = [function for function in self.functions if isinstance(function.trigger, ContainerTrigger)]
        if containers:  # each consumer worker a task, with the ECS agent's protection endpoint
            places = service_places(self.outputs)
            clusters = {function.name: places[self._source(function)].cluster for function in containers}
            self._running.tasks = TaskAgent(clusters, role_permits(self.client))
        for kind in WORKERS:
            for function in self.functions:
                if isinstance(function.trigger, kind):
                    for _ in range(self._workers(function)):
                        self._running.spawn(function)
        if containers:
            self._scaler = start_scaler(
                self.client("sqs"),
                containers,
                self._running,
                self._source,
                self.on_line,
                ecs=self.client("ecs"),
                places=places,
            )
        if self.gateway_url is not None:
            progress(f"waiting for the gateway on {self.gateway_url}")
            self._wait_for_gateway()
        if self.faults is not None:
            for name, every in self.faults.restart_every.model_dump().items():
                if every:
                    sources = {self._source(f) for f in self.functions if isinstance(f.trigger, RESTARTED[name])}
                    threading.Thread(target=self._running.restart_every, args=(sources, every), daemon=True).start()

    def _source(self, function: LocalFunction) -> str:
        return function.name.removeprefix(resource_name(self.namespace, ""))

    def _python(self, function: LocalFunction) -> FunctionPython:
        return self._pythons().of(function.name, function.code_dir)

    def _workers(self, function: LocalFunction) -> int:
        """Workers per trigger: one per shard, schedule and API (the API's server starts the function's
        execution environments itself); queues get `workers_per_function`, within the mapping's
        concurrency."""
        if isinstance(function.trigger, ContainerTrigger):
            return function.trigger.min_tasks  # the scaler starts the rest
        if not isinstance(function.trigger, QueueTrigger):
            return 1
        return max(1, min(self.workers_per_function, function.trigger.max_concurrency or self.workers_per_function))

    def _wait_for_gateway(self) -> None:
        deadline = time.monotonic() + GATEWAY_START_SECONDS
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.gateway_port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"the gateway did not listen on {self.gateway_url} within {GATEWAY_START_SECONDS:.0f} s")

    def _programs_file(self) -> Path:
        """The compiled flow programs, which the build puts beside the gateway's code on AWS."""
        file = Path(self._state.name) / PROGRAMS_FILE
        if not file.exists():  # written whole, then renamed: workers start side by side
            partial = file.with_suffix(f".{os.getpid()}.{threading.get_ident()}")
            partial.write_text(self.mesh.programs_json())
            partial.replace(file)
        return file

    def worker_spec(self, function: LocalFunction) -> dict[str, Any]:
        """What a worker process is given: the function as deployed, pointed at the local endpoint."""
        task = isinstance(function.trigger, ContainerTrigger)  # an ECS task's consumer, not a Lambda function
        environment = {
            **function.environment,
            **role_environment(self.client, function.role, ECS_TASKS if task else LAMBDA, function.name),
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_DEFAULT_REGION": REGION,
            **({} if task else {"AWS_LAMBDA_FUNCTION_NAME": function.name}),
            # metrics on, as on AWS: their lines go to the worker log, where the console counts the work
            "POWERTOOLS_LOG_LEVEL": os.environ.get("POWERTOOLS_LOG_LEVEL", "WARNING"),
        }
        if self._issuer_server is not None and variables.GATEWAY_AUTH.name in environment:
            environment[variables.GATEWAY_JWKS_URL.name] = self._issuer_server.jwks_url  # local only
            if self._issuer_server.sign_in is not None:
                environment[variables.GATEWAY_HOSTED_UI_URL.name] = self._issuer_server.url  # local only
        if FLOW_PROGRAMS.name in environment:  # bundling is skipped here: the file the build adds, written apart
            environment[FLOW_PROGRAMS.name] = str(self._programs_file())
        extra: dict[str, Any] = {}
        if isinstance(function.trigger, HttpTrigger):
            extra = {"port": self.gateway_port, "api_key": None if self.issuer is not None else self.api_key}
            extra |= {"throttle": self.throttle, "route_throttles": self.route_throttles}
            extra |= {"well_known_open": self.well_known_open}
            if self.browser_origins:  # local only, as the JWKS URL: the deployed function keeps the mesh's
                given = parse_origins(environment.get(variables.GATEWAY_CORS_ORIGINS.name, ""))
                allowed = dict.fromkeys((*given, *self.browser_origins))
                environment[variables.GATEWAY_CORS_ORIGINS.name] = ",".join(allowed)
            # API Gateway's stand-in asks the endpoint who holds a key (`iam_auth.endpoint_signers`)
            environment[admin_key.SECRET_VARIABLE] = admin_key.credentials(self.endpoint)["AWS_SECRET_ACCESS_KEY"]
        elif isinstance(function.trigger, ScheduleTrigger):
            extra = {"interval": self.schedule_seconds}
        elif isinstance(function.trigger, StreamTrigger):
            extra = {"checkpoint_file": str(Path(self._state.name) / f"{function.name}.checkpoint.json")}
        return {
            "function": function.name,
            "handler": function.handler,
            "environment": environment,
            "timeout": function.timeout,
            "memory": function.memory,
            **dataclasses.asdict(function.trigger),
            **extra,
        }

    def queue_depths(self) -> dict[str, tuple[int, int, int]]:
        return queue_depths(self.client("sqs"), self.namespace)

    def endpoint_cpu_seconds(self) -> float:
        """CPU time of the endpoint this stack started (benches)."""
        assert self._endpoint is not None, "the stack did not start its endpoint"
        return self._endpoint.cpu_seconds()

    def open_spark_batches(self) -> int:
        """Spark batches staged or running, or ended but not routed yet: their envelopes are in no queue."""
        return open_spark_batches(self.client("dynamodb"), self.outputs.get("SparkBatchesTable"))

    def wait_until_idle(self, timeout: float, settle: float = 1.5, on_tick: Callable[[], None] | None = None) -> bool:
        """True once every queue has stayed empty and no Spark batch has been open for `settle` s."""
        busy = Busy(self.client("sqs"), self.namespace, self.open_spark_batches)
        return wait_until_idle(busy, timeout, settle, on_tick)

    def protected_tasks(self) -> list[str]:
        """The ARNs of the container actors' tasks (consumer workers) protected from scale-in now."""
        return self._running.tasks.protected_tasks() if self._running.tasks is not None else []

    def stop(self) -> None:
        if self._scaler is not None:
            self._scaler.stop()
        self._running.stop()
        if self._running.tasks is not None:
            self._running.tasks.stop()
            self._running.tasks = None
        if self._runs_spark:
            endpoint_admin(self.endpoint, "spark-stop", {})
        if self._issuer_server is not None:
            self._issuer_server.stop()
            self._issuer_server = None
        self._state.cleanup()
        if self._endpoint is not None:
            self._endpoint.stop()
            self._endpoint = None

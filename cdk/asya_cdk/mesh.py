"""`Mesh`: everything one namespace needs, built from a mesh config.

Per actor an `ActorFunction`; the crew (`x-sink`, `x-sump`, `x-pause`, `x-resume`: `asya_cdk.crew`)
in the same scope; the results bucket, the idempotency table, the task tables and the status gateway, the
dashboard and the alarms. Dead letters: each actor's queue and the other crew's redrive into x-sump's
queue, which records them as failed tasks with reason `Redriven`; x-sump's own queue redrives into
`asya-<ns>-x-sump-dlq`, watched by an alarm, so nothing is ever dropped silently.

A `runtime: spark` actor's queue feeds its dispatcher (on the same `ActorFunction`), and a
`SparkActor` adds its EMR Serverless application, job role, code assets and collector; the mesh's
Spark batches table is made when any actor needs it.

A mesh too large for one CloudFormation stack (`asya_cdk.plan`) keeps all of the above but its
actors in the main stack and puts the actors into nested stacks, `Actors1`, `Actors2`, ...: an
actor's resources reference the main stack's (passed in as nested-stack parameters), never the
other way round, so the dashboard and the alarms see nested actors by their names.

Every hop reports its task's status, so every actor and crew function gets the task tables' names and
the right to move a task forward and append its events, and nothing more on them.
"""

from __future__ import annotations

from collections.abc import Callable

import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from asya.names import (
    BACKLOG,
    BATCHES_TABLE,
    CREW,
    IDEMPOTENCY_TABLE,
    PAUSE,
    RESUME,
    SINK,
    SUMP,
    SUMP_DEAD_LETTERS,
    resource_name,
)
from asya.results import PREFIX as RESULTS_PREFIX
from asya.startup import encode_files
from asya.variables import FILES
from asya_cdk.actor import ActorFunction, FunctionOptions, dead_letter_queue, nag_arn
from asya_cdk.actor_config import CREW_SETTINGS, ActorConfig
from asya_cdk.actor_state import own_keys, own_objects, state_bucket, state_table
from asya_cdk.buckets import kept_bucket
from asya_cdk.claims import grant_claims
from asya_cdk.container import ContainerActor, mesh_cluster
from asya_cdk.container_backlog import BacklogSchedule
from asya_cdk.crew import Crew, idempotency_items
from asya_cdk.dashboard import MeshDashboard
from asya_cdk.environment import MeshNames, lambda_actor_environment
from asya_cdk.fly_api import FlyApi
from asya_cdk.function import mesh_code
from asya_cdk.gateway import StatusGateway
from asya_cdk.grants import grant_permissions, grant_secrets, shipped_files
from asya_cdk.job_image import JobImages
from asya_cdk.layer import SidecarLayer
from asya_cdk.loaded_mesh import LoadedMesh
from asya_cdk.mesh_secrets import seal_secret
from asya_cdk.packaging import ACTOR_ENTRY, image_code, image_source, zip_code
from asya_cdk.plan import StackPlan, plan_stacks
from asya_cdk.queue_grants import sending_policies
from asya_cdk.queue_lists import actor_destinations, every_queue
from asya_cdk.spark import SparkActor, batches_table
from asya_cdk.spark_updates import ApplicationGuards
from asya_cdk.tasks import TaskTables, gathering, joins_table, mesh_table, string_key
from asya_spark.ledger import CLAIM_TTL_SECONDS
from asya_spark.staging import PREFIX as SPARK_PREFIX


class Mesh(Construct):
    """Exposes `actors` (name → `ActorFunction`, crew included), `spark` (name → `SparkActor`),
    `spark_batches` (None without Spark actors), `joins` (the joins table, None without join actors),
    `job_images` (None unless the mesh builds the Spark job's image), `state` and `state_values` (the
    actor state table and bucket, None without an actor with `state:`), `bucket`, `table`
    (idempotency), `task_tables` (`TaskTables`), `gateway`
    (`StatusGateway`), `dashboard`, `backlog` (x-backlog's `BacklogSchedule`, None without container
    actors), `plan` (`StackPlan`) and `nested` (the nested stacks of actors, empty for a mesh that fits
    one stack)."""

    def __init__(self, scope: Construct, construct_id: str, mesh: LoadedMesh, *, plan: StackPlan | None = None) -> None:
        super().__init__(scope, construct_id)
        self.mesh = mesh
        self.namespace = namespace = mesh.config.namespace
        self.plan = plan or plan_stacks(mesh.config)
        self.nested = [
            cdk.NestedStack(
                self,
                share.name,
                description=_truncate(f"asya mesh '{namespace}', actors: {', '.join(share.actors)}", 1024),
            )
            for share in self.plan.nested
        ]
        self.bucket = self._results_bucket()
        self.table = mesh_table(
            self,
            "Idempotency",
            string_key("id"),
            table_name=resource_name(namespace, IDEMPOTENCY_TABLE),
            ttl_attribute="expiration",
        )
        self.task_tables = TaskTables(self, "Status", namespace=namespace)
        self.fly = FlyApi(self, "Fly", namespace=namespace) if mesh.config.gateway.fly == "channel" else None
        self.spark_batches = batches_table(self, resource_name(namespace, BATCHES_TABLE)) if mesh.spark_actors else None
        self.sump_dlq = dead_letter_queue(self, "SumpDeadLetters", resource_name(namespace, SUMP_DEAD_LETTERS))
        self.joins = joins_table(self, namespace) if mesh.joins else None
        self.state = state_table(self, namespace) if mesh.stateful else None
        self.state_values = state_bucket(self, mesh.expiring_state) if mesh.stateful else None
        self._layers: dict[str, SidecarLayer] = {}
        self.seal = seal_secret(self, namespace)
        self.names = MeshNames(
            bucket=self.bucket.bucket_name,
            tasks_table=self.task_tables.tasks.table_name,
            events_table=self.task_tables.events.table_name,
            idempotency_table=self.table.table_name,
            batches_table=self.spark_batches.table_name if self.spark_batches is not None else "",
            sump_table=self.task_tables.sump.table_name,
            joins_table=self.joins.table_name if self.joins is not None else "",
            seal_secret=self.seal.secret_arn,
            state_table=self.state.table_name if self.state is not None else "",
            state_bucket=self.state_values.bucket_name if self.state_values is not None else "",
            fly_domain=self.fly.api.http_dns if self.fly is not None else "",
            fly_realtime_domain=self.fly.api.realtime_dns if self.fly is not None else "",
        )
        crew = Crew(
            self,
            mesh=mesh,
            names=self.names,
            layer=self._layer(CREW_SETTINGS.architecture),
            bucket=self.bucket,
            idempotency=self.table,
            sump_dead_letters=self.sump_dlq,
            sump_table=self.task_tables.sump,
        )
        self.actors: dict[str, ActorFunction | ContainerActor] = dict(crew.functions)
        self.spark: dict[str, SparkActor] = {}
        # the mesh's Fargate actors share one cluster; a GPU actor's has its own (`asya_cdk.container`)
        fargate = [a for a in mesh.config.actors.values() if a.container is not None and not a.container.gpu]
        self.cluster = mesh_cluster(self, namespace) if fargate else None
        # the job's image is built once for the mesh, when some Spark actor names no image of its own
        self.job_images = (
            JobImages(self, "SparkJobImages", namespace=namespace) if mesh.config.built_job_images() else None
        )
        # every Spark application is stopped before CloudFormation updates or deletes it (`asya_cdk.spark_updates`)
        self.application_guards = (
            ApplicationGuards(
                self,
                "ApplicationGuards",
                namespace=namespace,
                layer=self._layer(CREW_SETTINGS.architecture),
                table=self.spark_batches,
            )
            if self.spark_batches is not None
            else None
        )
        for name, settings in mesh.config.actors.items():
            self.actors[name] = self._actor(name, settings, crew.sump.queue)
        self.backlog = (  # what the container actors' scaling reads, each minute (`asya_cdk.container_backlog`)
            BacklogSchedule(
                self,
                "Backlog",
                namespace=namespace,
                actors=mesh.container_actors,
                layer=self._layer(CREW_SETTINGS.architecture),
            )
            if mesh.container_actors
            else None
        )
        for name, actor in self.actors.items():
            reporting = self.task_tables.crew_reporting() if name in CREW else self.task_tables.hop_reporting()
            for statement in reporting:
                actor.role.add_to_policy(statement)
            if self.fly is not None and name not in CREW and name not in self.spark:
                self.fly.grant_publish(actor.role)  # its FLY events (`asya.fly_channel`)
            self.seal.grant_read(actor.role)  # it checks the seals of what it receives, and seals what it sends
            # large payloads (`asya.claims`): actors send and read them (a Spark actor's dispatcher reads
            # them to stage them whole, its collector writes the job's large outputs; the job never calls
            # AWS), the keepers read them to keep them, and x-resume reads one for a flow program to
            # decide on and sends it on
            sender = (name not in CREW and name not in self.spark) or name == RESUME
            grant_claims(actor.role, self.bucket, namespace, write=sender)
        for spark in self.spark.values():
            grant_claims(spark.collector.role, self.bucket, namespace, read=False, write=True)
            self.seal.grant_read(spark.collector.role)
        self.gateway = StatusGateway(
            self,
            "Gateway",
            mesh=mesh,
            tables=self.task_tables,
            bucket=self.bucket,
            layer=self._layer(CREW_SETTINGS.architecture),
            names=self.names,
        )
        grant_claims(self.gateway.gateway.role, self.bucket, namespace, write=True)  # large payloads it starts
        self.seal.grant_read(self.gateway.gateway.role)  # the tasks it starts, resumes and redrives
        if self.fly is not None:
            self.fly.grant_follow(self.gateway.gateway.role)  # its follows hear FLY events (`asya_gateway.fly_feed`)
        self._grant_queues()
        self.dashboard = MeshDashboard(
            self,
            "Dashboard",
            namespace=namespace,
            queues=self._queues_seen_from_main(),
            functions=self._functions_seen_from_main(),
            sump_dlq=self.sump_dlq,
            api=self.gateway.api,
            stream_dlq=self.gateway.stream_dead_letters,
            spark_actors=list(self.spark),
            container_services={
                name: (actor.cluster_name, actor.full_name)
                for name, actor in self.actors.items()
                if isinstance(actor, ContainerActor)
            },
        )
        if mesh.config.alarm_topic_arn:
            self.dashboard.notify(mesh.config.alarm_topic_arn)
        _explain_findings(self, namespace)

    def _grant_queues(self) -> None:
        """Each role may send to the queues it needs, named one by one (`asya_cdk.queue_grants`): an
        actor (and a Spark actor's collector) to every actor and the crew it routes to, the crew and
        the gateway to every queue of the mesh."""
        names = list(self.mesh.config.actors)
        to_actors = sending_policies(self, "SendToActors", self.namespace, actor_destinations(names))
        to_all = sending_policies(self, "SendToMesh", self.namespace, every_queue(names))
        roles = [(actor.role, name in CREW) for name, actor in self.actors.items()]
        roles += [(spark.collector.role, False) for spark in self.spark.values()]
        roles.append((self.gateway.gateway.role, True))
        for role, everywhere in roles:
            for policy in to_all if everywhere else to_actors:
                role.add_managed_policy(policy)

    def _home(self, actor: str) -> Construct:
        """Where an actor's resources go: this construct, or its nested stack."""
        index = self.plan.group_of(actor)
        return self if index is None else self.nested[index]

    def _layer(self, architecture: str) -> SidecarLayer:
        """The sidecar layer for an architecture, made when a function first needs it."""
        if architecture not in self._layers:
            self._layers[architecture] = SidecarLayer(self, f"Sidecar-{architecture}", architecture=architecture)
        return self._layers[architecture]

    def _results_bucket(self) -> s3.Bucket:
        lifecycle = [
            s3.LifecycleRule(expiration=cdk.Duration.days(self.mesh.config.results.retention_days)),
            s3.LifecycleRule(abort_incomplete_multipart_upload_after=cdk.Duration.days(1)),
        ]
        if self.mesh.spark_actors:  # a staged Spark batch is needed until it is routed; its hop claims last as long
            lifecycle.append(
                s3.LifecycleRule(prefix=f"{SPARK_PREFIX}/", expiration=cdk.Duration.seconds(CLAIM_TTL_SECONDS))
            )
        return kept_bucket(self, "Results", lifecycle)

    def _actor(self, name: str, settings: ActorConfig, dead_letters: sqs.IQueue) -> ActorFunction | ContainerActor:
        """An actor's queue and function; a Spark actor's function is its dispatcher, and its
        `SparkActor` (application, job role, code, collector) sets the dispatcher's environment. A
        Lambda actor's function also gets what the mesh file says it needs (`asya_cdk.needs`): its
        libraries in its code or image, its files, secrets and grants, and its function options; a
        container actor's task, the same (`_needs`)."""
        home = self._home(name)
        if settings.runtime == "container":
            boxed = ContainerActor(
                home,
                f"Container-{name}",
                namespace=self.namespace,
                name=name,
                settings=settings,
                image=str(image_source(self.mesh, name, bundle=cdk.Stack.of(home).bundling_required)),
                environment=lambda_actor_environment(self.mesh, name, self.names),
                dead_letter_queue=dead_letters,
                cluster=self.cluster,
            )
            self._needs(name, settings, boxed, boxed.container.add_environment)
            return boxed
        spark = settings.runtime == "spark"
        if spark:
            code, handler, environment = mesh_code(), "asya_spark.dispatch.lambda_handler", {}
            options = None
        else:
            package = image_code if settings.package == "image" else zip_code
            code = package(self.mesh, name, bundle=cdk.Stack.of(home).bundling_required)
            handler, environment = ACTOR_ENTRY, lambda_actor_environment(self.mesh, name, self.names)
            options = FunctionOptions(
                ephemeral_storage=self.mesh.ephemeral_storage(name),
                vpc=settings.vpc,
                layers=settings.layers,
                provisioned_concurrency=settings.provisioned_concurrency,
            )
        actor = ActorFunction(
            home,
            f"Actor-{name}",
            namespace=self.namespace,
            name=name,
            settings=settings,
            code=code,
            layer=self._layer(settings.architecture),
            environment=environment,
            dead_letter_queue=dead_letters,
            handler=handler,
            options=options,
        )
        if spark:
            self.spark[name] = self._spark_actor(name, settings, actor)
            return actor
        self._needs(name, settings, actor, actor.function.add_environment)
        return actor

    def _needs(
        self,
        name: str,
        settings: ActorConfig,
        actor: ActorFunction | ContainerActor,
        add_environment: Callable[[str, str], object],
    ) -> None:
        """What a Lambda or container actor gets from the mesh file beyond its code: its files, secrets
        and grants, idempotency, its join's table and its state; one role's grants, whichever runtime."""
        files = shipped_files(actor, self.mesh, name, actor.role)
        if files:
            add_environment(FILES.name, encode_files(files))
        grant_secrets(actor.role, settings.secrets)
        grant_permissions(actor.role, name, settings.permissions)
        if settings.idempotency:
            actor.role.add_to_policy(idempotency_items(self.table, self.namespace))
        if settings.join is not None and self.joins is not None:
            actor.role.add_to_policy(gathering(self.joins))
        if settings.state is not None and self.state is not None and self.state_values is not None:
            actor.role.add_to_policy(own_keys(self.state, name))
            own_objects(actor.role, self.state_values, name)

    def _spark_actor(self, name: str, settings: ActorConfig, dispatcher: ActorFunction) -> SparkActor:
        assert self.spark_batches is not None  # made whenever the mesh has a Spark actor
        return SparkActor(
            self._home(name),
            f"Spark-{name}",
            mesh=self.mesh,
            name=name,
            dispatcher=dispatcher,
            bucket=self.bucket,
            table=self.spark_batches,
            task_tables=self.task_tables,
            layer=self._layer(settings.architecture),
            names=self.names,
            job_images=self.job_images,
            guards=self.application_guards,
        )

    def functions(self) -> dict[str, lambda_.IFunction]:
        """Every Lambda function of the mesh, by the name the dashboard shows."""
        gateway = self.gateway
        return {
            **{name: actor.function for name, actor in self.actors.items() if isinstance(actor, ActorFunction)},
            **{f"x-collect-{name}": spark.collector.function for name, spark in self.spark.items()},
            "gateway": gateway.gateway.function,
            "gateway-stream": gateway.stream.function,
            "gateway-backstop": gateway.backstop.function,
            **({BACKLOG: self.backlog.publisher.function} if self.backlog is not None else {}),
        }

    def _queues_seen_from_main(self) -> dict[str, sqs.IQueue]:
        """Every actor's queue as the main stack may reference it: itself, or for an actor in a nested
        stack, imported by the name the mesh gives it, so the main stack needs no output of a nested one."""
        main = cdk.Stack.of(self)
        queues: dict[str, sqs.IQueue] = {}
        for name, actor in self.actors.items():
            queues[name] = actor.queue
            if cdk.Stack.of(actor.queue) is not main:
                queue_name = resource_name(self.namespace, name)
                arn = main.format_arn(service="sqs", resource=queue_name, arn_format=cdk.ArnFormat.NO_RESOURCE_NAME)
                queues[name] = sqs.Queue.from_queue_attributes(
                    self, f"Seen-{name}-Queue", queue_arn=arn, queue_name=queue_name
                )
        return queues

    def _functions_seen_from_main(self) -> dict[str, lambda_.IFunction]:
        """`functions()` as the main stack may reference them (see `_queues_seen_from_main`)."""
        main = cdk.Stack.of(self)
        return {
            label: function
            if cdk.Stack.of(function) is main
            else lambda_.Function.from_function_name(
                self, f"Seen-{label}-Function", resource_name(self.namespace, label)
            )
            for label, function in self.functions().items()
        }


def _explain_findings(mesh: Mesh, namespace: str) -> None:
    """cdk-nag findings that are deliberate, each acknowledged with its reason."""
    cdk.Validations.of(mesh.bucket).acknowledge(
        cdk.Acknowledgment(
            id="AwsSolutions::AwsSolutions-S1",
            reason="Results are written only by the crew functions; CloudTrail data events audit access when a "
            "deployment needs it, without a second bucket per mesh.",
        )
    )
    bucket_arn = nag_arn(mesh, mesh.bucket)
    for name, actor in mesh.actors.items():
        if name in (SINK, SUMP, PAUSE):
            cdk.Validations.of(actor.role).acknowledge(
                cdk.Acknowledgment(
                    id=f"AwsSolutions::AwsSolutions-IAM5[Resource::{bucket_arn}/{RESULTS_PREFIX}/{namespace}/*]",
                    reason="The crew writes one object per envelope id (a result, a failure, a paused envelope), "
                    "so it may put objects under its namespace's results prefix only (no read, no delete).",
                )
            )


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."

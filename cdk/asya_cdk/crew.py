"""The crew's functions: x-sump, x-sink, x-pause and x-resume, each behind its own queue.

x-sump's queue redrives into `asya-<ns>-x-sump-dlq` and keeps messages as long as SQS allows; the
other three redrive into x-sump's. x-sump, x-sink and x-pause may put objects under the namespace's
results prefix (x-pause keeps the paused envelope for the resume); x-sink claims its records in the
idempotency table, so a redelivery keeps nothing twice.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from asya.dedup import idempotency_key_prefix
from asya.names import PAUSE, RESUME, SINK, SUMP
from asya.results import PREFIX as RESULTS_PREFIX
from asya_cdk.actor import ActorFunction
from asya_cdk.actor_config import CREW_SETTINGS
from asya_cdk.environment import MeshNames, crew_environment
from asya_cdk.function import mesh_code
from asya_cdk.layer import SidecarLayer
from asya_cdk.limits import SUMP_RETENTION
from asya_cdk.loaded_mesh import LoadedMesh


class Crew:
    """The four crew functions, made in the mesh's own scope rather than in a construct of their own,
    so that their resources keep the logical ids they were first deployed with. Exposes `functions`
    (name → `ActorFunction`) and `sump`."""

    def __init__(
        self,
        scope: Construct,
        *,
        mesh: LoadedMesh,
        names: MeshNames,
        layer: SidecarLayer,
        bucket: s3.IBucket,
        idempotency: dynamodb.ITable,
        sump_dead_letters: sqs.IQueue,
        sump_table: dynamodb.ITable,
    ) -> None:
        namespace = mesh.config.namespace

        def crew_function(name: str, dead_letters: sqs.IQueue, retention: cdk.Duration | None = None) -> ActorFunction:
            return ActorFunction(
                scope,
                f"Crew-{name}",
                namespace=namespace,
                name=name,
                settings=CREW_SETTINGS.model_copy(update={"tracing": mesh.config.tracing}),
                code=mesh_code(),
                layer=layer,
                environment=crew_environment(mesh, names, name),
                dead_letter_queue=dead_letters,
                handler=f"asya_crew.{name.removeprefix('x-')}.lambda_handler",
                retention=retention,
            )

        # SQS keeps a redriven message until its first enqueue plus the DLQ's retention
        self.sump = crew_function(SUMP, sump_dead_letters, cdk.Duration.seconds(SUMP_RETENTION))
        self.functions = {
            SUMP: self.sump,
            **{name: crew_function(name, self.sump.queue) for name in (SINK, PAUSE, RESUME)},
        }
        keep_results = iam.PolicyStatement(
            actions=["s3:PutObject"], resources=[bucket.arn_for_objects(f"{RESULTS_PREFIX}/{namespace}/*")]
        )
        for keeper in (SUMP, SINK, PAUSE):
            self.functions[keeper].role.add_to_policy(keep_results)
        self.functions[SINK].role.add_to_policy(idempotency_items(idempotency, namespace))
        # x-sump lists what it keeps; it only adds items (a conditional put), never reads or changes them
        listing = iam.PolicyStatement(actions=["dynamodb:PutItem"], resources=[sump_table.table_arn])
        self.sump.role.add_to_policy(listing)


def idempotency_items(table: dynamodb.ITable, namespace: str) -> iam.PolicyStatement:
    """Hop records of this namespace only: their keys all start with the sidecar's `asya-<ns>#` prefix."""
    return iam.PolicyStatement(
        actions=["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"],
        resources=[table.table_arn],
        conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [f"{idempotency_key_prefix(namespace)}#*"]}},
    )

"""A team's own CDK app: its bucket, a producer role, and an asya mesh added with `AsyaMesh`.

Synthesize from this folder with `npx cdk synth` (cdk.json runs this file), or `python app.py`.

An S3 notification put straight on an SQS queue carries S3's own event record, not an envelope, and the
sidecar sends whatever is not an envelope to x-sump (`ParseError`/`InvalidEnvelope`). So the bucket sends
its events to EventBridge, and a rule wraps each object-created event into an envelope that starts flow
`label-uploads` at its first actor's queue: no adapter code to deploy, and the queue policy admits this
rule only.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for folder in ("cdk", "sidecar_layer", "gateway_api", "spark_emr", "lambdas"):  # inside this repository
    if str(ROOT / folder) not in sys.path:
        sys.path.append(str(ROOT / folder))

# jsii prints a banner on Node releases past its support date unless told not to, before aws_cdk loads
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

import aws_cdk as cdk  # noqa: E402
from aws_cdk import aws_events as events  # noqa: E402
from aws_cdk import aws_events_targets as targets  # noqa: E402
from aws_cdk import aws_iam as iam  # noqa: E402
from aws_cdk import aws_s3 as s3  # noqa: E402
from constructs import Construct  # noqa: E402

from asya.envelope import ENVELOPE_VERSION  # noqa: E402
from asya_cdk import AsyaMesh  # noqa: E402

MESH_FILE = HERE / "mesh.yaml"
FLOW = "label-uploads"


class UploadsStack(cdk.Stack):
    """The team's stack as it was (`uploads`, `producer`) plus the mesh (`mesh`) and the rule between them."""

    def __init__(self, scope: Construct, construct_id: str, *, mesh_file: Path = MESH_FILE, **kwargs: object) -> None:
        super().__init__(scope, construct_id, **kwargs)  # type: ignore[arg-type]
        self.uploads = s3.Bucket(
            self,
            "Uploads",
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            event_bridge_enabled=True,  # the bucket's notifications go to EventBridge, where the rule wraps them
        )
        cdk.Validations.of(self.uploads).acknowledge(
            cdk.Acknowledgment(
                id="AwsSolutions::AwsSolutions-S1",
                reason="An example bucket; a team's real bucket keeps its own access logging.",
            )
        )
        self.mesh = AsyaMesh(self, "Mesh", mesh_file=mesh_file)
        entry = self.mesh.flow_entry(FLOW)
        route = self.mesh.mesh.flow_route(FLOW)
        self.rule = events.Rule(
            self,
            "UploadsStartFlow",
            description=f"each object created in the uploads bucket starts flow {FLOW}",
            event_pattern=events.EventPattern(
                source=["aws.s3"],
                detail_type=["Object Created"],
                detail={"bucket": {"name": [self.uploads.bucket_name]}},
            ),
            targets=[
                targets.SqsQueue(
                    entry.queue,
                    message=events.RuleTargetInput.from_object(
                        {
                            "version": ENVELOPE_VERSION,  # the envelope format this release writes
                            "id": events.EventField.event_id,  # EventBridge's own id: unique per upload
                            "route": {"prev": [], "curr": route[0], "next": route[1:]},
                            "payload": {
                                "bucket": events.EventField.from_path("$.detail.bucket.name"),
                                "key": events.EventField.from_path("$.detail.object.key"),
                                "size": events.EventField.from_path("$.detail.object.size"),
                            },
                        }
                    ),
                )
            ],
        )
        # a service of the team's own that starts the same flow with envelopes it writes itself
        self.producer = iam.Role(self, "Producer", assumed_by=iam.AccountRootPrincipal())
        self.mesh.grant_send(self.producer, flow=FLOW)
        _explain_notifications_handler(self)
        cdk.CfnOutput(self, "ApiUrl", value=self.mesh.url)
        cdk.CfnOutput(self, "UploadsBucket", value=self.uploads.bucket_name)


def _explain_notifications_handler(stack: cdk.Stack) -> None:
    """CDK sets a bucket's notifications through a function of its own, whose role has Lambda's basic
    execution policy; it is CDK's, not the team's or the mesh's, so the finding is acknowledged here."""
    for child in stack.node.children:
        if child.node.id.startswith("BucketNotificationsHandler"):
            cdk.Validations.of(child).acknowledge(
                cdk.Acknowledgment(
                    id="AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/"
                    "service-role/AWSLambdaBasicExecutionRole]",
                    reason="CDK's own handler that writes the bucket's notification configuration at deploy; "
                    "it only needs to write its logs.",
                )
            )


def main() -> None:
    app = cdk.App()
    UploadsStack(app, "team-uploads")
    app.synth()


if __name__ == "__main__":
    main()

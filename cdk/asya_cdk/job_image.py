"""The Spark job's image, built by the stack for Spark actors that name no `spark.image_uri`.

`asya_spark_job/image/Dockerfile` (the EMR Serverless release image plus Amazon Linux's python3.11) is built
at `cdk deploy` as an image asset, one per (release, architecture) of the mesh, and copied into the
mesh's own repository `asya-<ns>-spark-job`, tagged `<release>-<architecture>-<content>`: `<content>`
is the start of the asset's hash (the Dockerfile's folder, the build arguments, the platform), so a
changed image is a new URI. EMR Serverless resolves an application's image to a digest when the
application starts, so an image pushed again under the same tag would not be used until it happened to
restart; a new URI changes the application's settings, and its guard (`asya_cdk.spark_updates`) stops
it for the update. The repository keeps the newest `KEPT_IMAGES` of each (release, architecture), the
one in use and those a rolled-back deploy may return to. The copy is
`cdk-ecr-deployment`'s function (a prebuilt binary, so synthesis needs neither Docker nor a network):
the bootstrap's asset repository is shared by every stack of the account, while this one carries a
pull policy for EMR Serverless and goes away with the mesh.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_ecr_assets as ecr_assets
from aws_cdk import aws_iam as iam
from cdk_ecr_deployment import DockerImageName, ECRDeployment
from constructs import Construct

from asya.names import resource_name
from asya_cdk.sources import package_folder

_PLATFORMS = {"arm64": ecr_assets.Platform.LINUX_ARM64, "x86_64": ecr_assets.Platform.LINUX_AMD64}
_IMAGE_ARCHITECTURES = {"arm64": "arm64", "x86_64": "amd64"}  # as an image index names them
EMR_SERVERLESS = "emr-serverless.amazonaws.com"
# the copy function is the CDK's singleton for `Custom::CDKECRDeployment`: CloudFormation names it
# `<stack>-CustomCDKECRDeployment<id>-<suffix>`, so its log group is known only up to that suffix
COPY_PURPOSE = "CustomCDKECRDeployment"
PULL_ACTIONS = ["ecr:BatchGetImage", "ecr:DescribeImages", "ecr:GetDownloadUrlForLayer"]
CONTENT_DIGITS = 16  # of the asset's hash, in the tag
KEPT_IMAGES = 3


def image_tag(release: str, architecture: str) -> str:
    """What the images of one (release, architecture) are tagged with, before their content."""
    return f"{release}-{architecture}"


class JobImages(Construct):
    """Exposes `repository`; `image(release, architecture)` gives an image's URI and the copy that
    puts it there (an application must wait for it: EMR Serverless checks the image when the
    application is created)."""

    def __init__(self, scope: Construct, construct_id: str, *, namespace: str) -> None:
        super().__init__(scope, construct_id)
        stack = cdk.Stack.of(self)
        self.repository = ecr.Repository(
            self,
            "Repository",
            repository_name=resource_name(namespace, "spark-job"),
            image_scan_on_push=True,
            removal_policy=cdk.RemovalPolicy.DESTROY,
            empty_on_delete=True,
        )
        # EMR Serverless pulls with its service principal, for applications of this account and region.
        # The condition cannot name the applications' own ARNs: their ids are made when they are created,
        # and they are created after this policy and the image (EMR Serverless checks both then).
        self.repository.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.ServicePrincipal(EMR_SERVERLESS)],
                actions=PULL_ACTIONS,
                conditions={
                    "StringEquals": {"aws:SourceAccount": stack.account},
                    "ArnLike": {
                        "aws:SourceArn": f"arn:{stack.partition}:emr-serverless:{stack.region}:{stack.account}"
                        ":/applications/*"
                    },
                },
            )
        )
        # The copy function's role, given to it without policy updates: the library would otherwise add
        # push and pull on every repository and reads of every S3 object.
        self.copy_role = iam.Role(
            self,
            "CopyRole",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"asya {namespace}: copy the Spark job's image into asya-{namespace}-spark-job",
        )
        self.repository.grant_pull_push(self.copy_role)
        logs = f"arn:{stack.partition}:logs:{stack.region}:{stack.account}:log-group:/aws/lambda/{stack.stack_name}"
        logs += f"-{COPY_PURPOSE}"
        self.copy_role.add_to_policy(
            iam.PolicyStatement(
                actions=["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[f"{logs}*"],
            )
        )
        self._images: dict[tuple[str, str], tuple[str, ECRDeployment]] = {}
        self._explain_findings(stack.stack_name)

    def _explain_findings(self, stack_name: str) -> None:
        logs = f"arn:<AWS::Partition>:logs:<AWS::Region>:<AWS::AccountId>:log-group:/aws/lambda/{stack_name}"
        logs += f"-{COPY_PURPOSE}"
        reasons = {
            "AwsSolutions::AwsSolutions-IAM5[Resource::*]": "ecr:GetAuthorizationToken takes no narrower "
            "resource; pulling and pushing are scoped to the asset repository and the mesh's job repository.",
            f"AwsSolutions::AwsSolutions-IAM5[Resource::{logs}*]": "The copy function's name is made by "
            "CloudFormation from the stack's name and a suffix, so it may write only log groups of that name.",
        }
        for finding, reason in reasons.items():
            cdk.Validations.of(self.copy_role).acknowledge(cdk.Acknowledgment(id=finding, reason=reason))

    def image(self, release: str, architecture: str) -> tuple[str, ECRDeployment]:
        key = (release, architecture)
        if key not in self._images:
            tag = image_tag(release, architecture)
            asset = ecr_assets.DockerImageAsset(
                self,
                f"Built-{tag}",
                directory=str(package_folder("asya_spark_job") / "image"),
                platform=_PLATFORMS[architecture],
                build_args={"RELEASE": release},
            )
            uri = self.repository.repository_uri_for_tag(f"{tag}-{asset.asset_hash[:CONTENT_DIGITS]}")
            self.repository.add_lifecycle_rule(
                description=f"the newest {KEPT_IMAGES} job images for {tag}",
                tag_prefix_list=[f"{tag}-"],
                max_image_count=KEPT_IMAGES,
            )
            asset.repository.grant_pull(self.copy_role)
            copy = ECRDeployment(
                self,
                f"Copy-{tag}",
                src=DockerImageName(asset.image_uri),
                dest=DockerImageName(uri),
                role=self.copy_role.without_policy_updates(),
                # the copy picks this architecture from an image index (a Docker with the containerd image
                # store pushes one, with an attestation beside the image); its default is amd64 alone
                image_arch=[_IMAGE_ARCHITECTURES[architecture]],
            )
            copy.node.add_dependency(self.copy_role)  # the role's policy exists before the copy runs
            self._images[key] = (uri, copy)
        return self._images[key]

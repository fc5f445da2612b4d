"""Deploying the CDK app's own template into the local endpoint's CloudFormation.

The same `MeshStack` that `cdk deploy` sends to AWS is synthesized here (bundling skipped: functions
run from this machine's environment), its file assets are zipped into the local bootstrap bucket, and
the template is created as a stack. A mesh split into nested stacks (`asya_cdk.plan`) deploys the same
way: moto's CloudFormation creates an `AWS::CloudFormation::Stack` from its `TemplateURL` in the local
bootstrap bucket, with its parameters, as AWS does; nested templates are published as the file assets
they are. The runner then reads what was deployed back from the local endpoint
(`asya_local.deployed_functions`), so the local mesh cannot drift from AWS.
"""

from __future__ import annotations

import io
import json
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from asya_cdk.loaded_mesh import LoadedMesh
from asya_cdk.plan import STACK_BUDGET
from asya_local.cognito_pools import create_user_pools
from asya_local.ecs_resources import without_task_runners
from asya_local.event_apis import create_event_apis
from asya_local.functions.lambda_shapes import ACCOUNT, REGION
from asya_local.generated_secrets import create_generated_secrets
from asya_local.template_refs import dropped, without_resources
from asya_spark.stopper import AFTER_TYPE, GUARD_TYPE

BOOTSTRAP_BUCKET = f"cdk-hnb659fds-assets-{ACCOUNT}-{REGION}"


NESTED_TEMPLATE_SUFFIX = ".nested.template.json"


@dataclass(frozen=True)
class Synthesized:
    stack_name: str
    template: dict[str, Any]
    code_dirs: dict[str, Path]  # asset object key → the folder (or, for a file asset, the file) it was made from
    outdir: Path
    nested: dict[str, dict[str, Any]] = field(default_factory=dict)  # object key → a nested stack's template
    image_dirs: dict[str, Path] = field(default_factory=dict)  # image tag → the folder it is built from

    @property
    def templates(self) -> list[dict[str, Any]]:
        """The main stack's template and its nested stacks'."""
        return [self.template, *self.nested.values()]


def synthesize(mesh: LoadedMesh, outdir: Path | None = None, stack_budget: int = STACK_BUDGET) -> Synthesized:
    """Synthesize the mesh's stack in this process, without bundling (nothing is built for AWS);
    `stack_budget` as `MeshStack` takes it."""
    from asya_cdk.stack import MeshStack, stack_name

    name = stack_name(mesh)
    return synthesize_app(name, lambda app: MeshStack(app, name, mesh=mesh, stack_budget=stack_budget), outdir)


def synthesize_app(name: str, build: Callable[[Any], object], outdir: Path | None = None) -> Synthesized:
    """Synthesize the stack `build(app)` adds to a fresh CDK app (named `name`), without bundling."""
    import aws_cdk as cdk

    out = outdir or Path(tempfile.mkdtemp(prefix="asya-cdk-"))
    app = cdk.App(outdir=str(out), context={"aws:cdk:bundling-stacks": []})
    build(app)
    app.synth()
    template, unused_code = local_template(json.loads((out / f"{name}.template.json").read_text()))
    assets = json.loads((out / f"{name}.assets.json").read_text())
    code_dirs: dict[str, Path] = {}
    nested: dict[str, dict[str, Any]] = {}
    for asset in assets.get("files", {}).values():
        source = Path(asset["source"]["path"])
        source = source if source.is_absolute() else out / source
        for destination in asset["destinations"].values():
            if source.name.endswith(NESTED_TEMPLATE_SUFFIX):
                nested[destination["objectKey"]] = local_template(json.loads(source.read_text()))[0]
            elif source.name != f"{name}.template.json" and destination["objectKey"] not in unused_code:
                code_dirs[destination["objectKey"]] = source  # the main template goes to CloudFormation directly
    image_dirs = {
        destination["imageTag"]: out / image["source"]["directory"]
        for image in assets.get("dockerImages", {}).values()
        for destination in image["destinations"].values()
    }
    return Synthesized(name, template, code_dirs, out, nested, image_dirs)


def local_template(template: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
    """A synthesized template as moto's CloudFormation can create it (`without_image_copies`,
    `without_task_runners`, `without_aliases`), and the object keys of code nothing local runs."""
    kept, unused_code = without_image_copies(template)
    return without_aliases(without_task_runners(kept)), unused_code


IMAGE_COPY = "Custom::CDKECRDeployment"
APPLICATION_GUARDS = (GUARD_TYPE, AFTER_TYPE)  # a Spark application's, `asya_cdk.spark_updates`


def without_image_copies(template: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
    """The template without the Spark job image's copies and the function that makes them, and without
    the guards that stop a Spark application before it is updated or deleted; and the object keys of the copy
    function's code. Locally a Spark job runs in Spark local mode on this machine, not in the image:
    the image asset is never built (only file assets are published here), and the copy function (a
    Linux binary calling ECR's registry API) could not run under moto anyway. A guard acts only on a
    stack's update or deletion, which the local stack never makes (it deploys afresh and ends with its
    endpoint), and moto would try to run its provider in Docker."""
    resources = dict(template["Resources"])
    custom = {logical_id for logical_id, r in resources.items() if r["Type"] in (IMAGE_COPY, *APPLICATION_GUARDS)}
    tokens = [resources[c]["Properties"]["ServiceToken"].get("Fn::GetAtt", [None])[0] for c in custom]
    functions = {token for token in tokens if token in resources}  # a nested stack's comes as a parameter
    # and CDK's provider framework behind the guards, the one function the mesh does not name
    functions |= {
        logical_id
        for logical_id, r in resources.items()
        if r["Type"] == "AWS::Lambda::Function" and "FunctionName" not in r["Properties"]
    }
    unused_code = {resources[f]["Properties"]["Code"]["S3Key"] for f in functions}
    removed = custom | functions
    kept = dropped(resources, removed)
    return {**template, "Resources": kept}, unused_code


ALIAS = "AWS::Lambda::Alias"


def without_aliases(template: dict[str, Any]) -> dict[str, Any]:
    """The template without function aliases, each event source on an alias pointed at its function.
    moto's CloudFormation does not know `AWS::Lambda::Alias` (an actor with `provisioned_concurrency`
    is invoked through its `live` alias), so a reference to one would fail the stack; locally the
    function itself runs, as the alias would run the same code, and warm environments are not kept."""
    resources = template["Resources"]
    aliases = {
        logical_id: resource["Properties"]["FunctionName"]
        for logical_id, resource in resources.items()
        if resource["Type"] == ALIAS
    }
    if not aliases:
        return template
    kept = {logical_id: resource for logical_id, resource in resources.items() if logical_id not in aliases}
    for logical_id, resource in kept.items():
        if resource["Type"] == "AWS::Lambda::EventSourceMapping":
            target = _alias_named(resource["Properties"]["FunctionName"], aliases)
            if target is not None:
                kept[logical_id] = {**resource, "Properties": {**resource["Properties"], "FunctionName": target}}
    return {**template, "Resources": kept}


def _alias_named(value: Any, aliases: dict[str, Any]) -> Any:
    """The function behind the alias `value` refers to (an alias's ARN or name, in any expression), or None."""
    if isinstance(value, dict):
        if value.get("Ref") in aliases:
            return aliases[value["Ref"]]
        value = list(value.values())
    if isinstance(value, list):
        return next((found for item in value if (found := _alias_named(item, aliases)) is not None), None)
    return None


def publish_assets(s3: Any, synthesized: Synthesized) -> None:
    """What `cdk-assets` does on AWS: zip each folder into the bootstrap bucket, and copy each file
    asset as it is. Nested templates are published by `deploy`, once they are made local."""
    s3.create_bucket(Bucket=BOOTSTRAP_BUCKET)
    for key, source in synthesized.code_dirs.items():
        s3.put_object(Bucket=BOOTSTRAP_BUCKET, Key=key, Body=source.read_bytes() if source.is_file() else _zip(source))


def _zip(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for file in sorted(folder.rglob("*")):
            if file.is_file() and "__pycache__" not in file.parts:
                archive.write(file, file.relative_to(folder))
    return buffer.getvalue()


def deploy(
    cloudformation: Any,
    synthesized: Synthesized,
    emr_serverless: Any = None,
    timeout: float = 60.0,
    s3: Any = None,
    *,
    cognito: Any = None,
    secretsmanager: Any = None,
    served: dict[str, str] | None = None,
    endpoint: str | None = None,
) -> dict[str, str]:
    """Create the stack and wait for it; returns its outputs. The bootstrap version check is dropped:
    there is no bootstrap stack locally, and the assets were published above instead. EMR Serverless
    applications (`emr_serverless`), Cognito user pools (`cognito`) and generated secrets
    (`secretsmanager`) are created through their own APIs first, as moto's CloudFormation does not know
    them; in nested templates too, which are then
    published (`s3`) for moto to read. `served`: outputs whose value is where the local stack serves
    what AWS would (`ApiUrl`: the local gateway server, as API Gateway has no data plane here), so a
    client that finds the mesh from its outputs reaches it. `endpoint`: the local endpoint, which serves
    AppSync Event APIs itself (`asya_local.event_apis`)."""

    def created_apart(template: dict[str, Any]) -> dict[str, Any]:
        if endpoint is not None:
            template = create_event_apis(endpoint, template)
        if emr_serverless is not None:
            template = create_emr_applications(emr_serverless, template)
        if secretsmanager is not None:
            template = create_generated_secrets(secretsmanager, template)
        return create_user_pools(cognito, template) if cognito is not None else template

    template = dict(synthesized.template)
    if "Outputs" in template:
        outputs = template["Outputs"]
        template["Outputs"] = outputs | {
            name: {**outputs[name], "Value": value} for name, value in (served or {}).items() if name in outputs
        }
    template = created_apart(template)
    for key, nested in synthesized.nested.items():
        if s3 is None:
            raise ValueError(f"stack {synthesized.stack_name} has nested stacks: deploying it needs an s3 client")
        local = created_apart(nested)
        s3.put_object(Bucket=BOOTSTRAP_BUCKET, Key=key, Body=json.dumps(local).encode())
    template.pop("Rules", None)
    template["Parameters"] = {k: v for k, v in template.get("Parameters", {}).items() if k != "BootstrapVersion"}
    cloudformation.create_stack(
        StackName=synthesized.stack_name, TemplateBody=json.dumps(template), Capabilities=["CAPABILITY_IAM"]
    )
    deadline = time.monotonic() + timeout
    while True:
        stack = cloudformation.describe_stacks(StackName=synthesized.stack_name)["Stacks"][0]
        if not stack["StackStatus"].endswith("IN_PROGRESS"):
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"stack {synthesized.stack_name} still {stack['StackStatus']} after {timeout:.0f}s")
        time.sleep(0.1)
    if stack["StackStatus"] != "CREATE_COMPLETE":
        raise RuntimeError(
            f"stack {synthesized.stack_name}: {stack['StackStatus']} {stack.get('StackStatusReason', '')}"
        )
    return {output["OutputKey"]: output["OutputValue"] for output in stack.get("Outputs", [])}


ENVIRONMENT_LIMIT_BYTES = 4096  # Lambda: all of a function's environment variables, keys and values


class EnvironmentTooLargeError(RuntimeError):
    """A function whose environment Lambda would refuse (moto accepts it)."""


def refuse_oversized_environments(lambda_client: Any, synthesized: Synthesized) -> None:
    """Fail as CreateFunction fails on AWS when a function's environment, as deployed (every token
    resolved), passes 4 KB: the sum of its keys and values in bytes."""
    functions = (
        (logical_id, resource)
        for template in synthesized.templates
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::Lambda::Function"
    )
    for logical_id, resource in functions:
        name = resource["Properties"]["FunctionName"]
        variables = lambda_client.get_function_configuration(FunctionName=name).get("Environment", {})
        size = sum(len(key.encode()) + len(value.encode()) for key, value in variables.get("Variables", {}).items())
        if size > ENVIRONMENT_LIMIT_BYTES:
            raise EnvironmentTooLargeError(
                f"stack {synthesized.stack_name}: {logical_id} ({name}) CREATE_FAILED: InvalidParameterValueException: "
                "Lambda was unable to configure your environment variables because the environment variables you "
                "have provided exceeded the 4KB limit. The environment variables size is calculated as the sum of "
                f"all keys and values in bytes. ({size} bytes; the largest: {_largest(variables['Variables'])})"
            )


def _largest(variables: dict[str, str], count: int = 3) -> str:
    ranked = sorted(variables.items(), key=lambda item: len(item[0]) + len(item[1]), reverse=True)[:count]
    return ", ".join(f"{key} {len(key.encode()) + len(value.encode())} bytes" for key, value in ranked)


EMR_APPLICATION = "AWS::EMRServerless::Application"


def create_emr_applications(emr_serverless: Any, template: dict[str, Any]) -> dict[str, Any]:
    """Create each EMR Serverless application of the template with the EMR Serverless API, and return
    the template without them, every `Ref` and `Fn::GetAtt` to one replaced by its id or ARN."""
    values: dict[tuple[str, str], str] = {}
    for logical_id, resource in template["Resources"].items():
        if resource["Type"] != EMR_APPLICATION:
            continue
        properties = resource["Properties"]
        created = emr_serverless.create_application(
            name=properties["Name"],
            releaseLabel=properties["ReleaseLabel"],
            type=properties["Type"],
            clientToken=logical_id,
        )
        values[(logical_id, "Ref")] = values[(logical_id, "ApplicationId")] = created["applicationId"]
        values[(logical_id, "Arn")] = created["arn"]
    return without_resources(template, values)

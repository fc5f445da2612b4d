"""Deploying the CDK app's own template into the local endpoint's CloudFormation.

The same `MeshStack` that `cdk deploy` sends to AWS is synthesized here (bundling skipped: functions
run from this machine's environment), its file assets are zipped into the local bootstrap bucket, and
the template is created as a stack. The runner then reads what was deployed (functions, environment,
event source mappings, queues) back from the local endpoint, so the local mesh cannot drift from AWS.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from asya_cdk.config import LoadedMesh
from asya_local.lambda_shapes import ACCOUNT, REGION

BOOTSTRAP_BUCKET = f"cdk-hnb659fds-assets-{ACCOUNT}-{REGION}"


@dataclass(frozen=True)
class Synthesized:
    stack_name: str
    template: dict[str, Any]
    code_dirs: dict[str, Path]  # asset object key → the folder it was made from
    outdir: Path


def synthesize(mesh: LoadedMesh, outdir: Path | None = None) -> Synthesized:
    """Synthesize the mesh's stack in this process, without bundling (nothing is built for AWS)."""
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    import aws_cdk as cdk

    from asya_cdk.stack import MeshStack, stack_name

    out = outdir or Path(tempfile.mkdtemp(prefix="asya-cdk-"))
    app = cdk.App(outdir=str(out), context={"aws:cdk:bundling-stacks": []})
    name = stack_name(mesh)
    MeshStack(app, name, mesh=mesh)
    app.synth()
    template = json.loads((out / f"{name}.template.json").read_text())
    assets = json.loads((out / f"{name}.assets.json").read_text())
    code_dirs: dict[str, Path] = {}
    for asset in assets.get("files", {}).values():
        source = Path(asset["source"]["path"])
        for destination in asset["destinations"].values():
            code_dirs[destination["objectKey"]] = source if source.is_absolute() else out / source
    return Synthesized(name, template, code_dirs, out)


def publish_assets(s3: Any, synthesized: Synthesized) -> None:
    """What `cdk-assets` does on AWS: zip each folder into the bootstrap bucket."""
    s3.create_bucket(Bucket=BOOTSTRAP_BUCKET)
    for key, folder in synthesized.code_dirs.items():
        s3.put_object(Bucket=BOOTSTRAP_BUCKET, Key=key, Body=_zip(folder))


def _zip(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for file in sorted(folder.rglob("*")):
            if file.is_file() and "__pycache__" not in file.parts:
                archive.write(file, file.relative_to(folder))
    return buffer.getvalue()


def deploy(cloudformation: Any, synthesized: Synthesized, timeout: float = 60.0) -> dict[str, str]:
    """Create the stack and wait for it; returns its outputs. The bootstrap version check is dropped:
    there is no bootstrap stack locally, and the assets were published above instead."""
    template = dict(synthesized.template)
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


@dataclass(frozen=True)
class LocalFunction:
    """One deployed function and its event source, as the local runner needs them."""

    name: str
    handler: str
    environment: dict[str, str]
    timeout: float
    memory: int
    code_dir: Path
    queue_url: str
    batch_size: int
    batching_window: float
    max_concurrency: int | None


def deployed_functions(lambda_client: Any, sqs: Any, synthesized: Synthesized) -> list[LocalFunction]:
    """Read functions and event source mappings back from the endpoint; code comes from the assets."""
    code_by_function = {
        resource["Properties"]["FunctionName"]: synthesized.code_dirs[resource["Properties"]["Code"]["S3Key"]]
        for resource in synthesized.template["Resources"].values()
        if resource["Type"] == "AWS::Lambda::Function"
    }
    functions = []
    for mapping in lambda_client.list_event_source_mappings()["EventSourceMappings"]:
        name = mapping["FunctionArn"].rsplit(":", 1)[-1]
        if name not in code_by_function:
            continue
        configuration = lambda_client.get_function_configuration(FunctionName=name)
        queue_name = mapping["EventSourceArn"].rsplit(":", 1)[-1]
        functions.append(
            LocalFunction(
                name=name,
                handler=configuration["Handler"],
                environment=configuration.get("Environment", {}).get("Variables", {}),
                timeout=float(configuration["Timeout"]),
                memory=int(configuration["MemorySize"]),
                code_dir=code_by_function[name],
                queue_url=sqs.get_queue_url(QueueName=queue_name)["QueueUrl"],
                batch_size=int(mapping.get("BatchSize", 10)),
                batching_window=float(mapping.get("MaximumBatchingWindowInSeconds", 0)),
                max_concurrency=mapping.get("ScalingConfig", {}).get("MaximumConcurrency"),
            )
        )
    return sorted(functions, key=lambda function: function.name)


def take_over_event_sources(lambda_client: Any) -> None:
    """Disable the endpoint's own event source mappings once their settings are read: moto would
    otherwise receive each new message itself and try to run the function in Docker, bumping the
    message's receive count each time. The local workers are the pollers instead."""
    for mapping in lambda_client.list_event_source_mappings()["EventSourceMappings"]:
        lambda_client.update_event_source_mapping(UUID=mapping["UUID"], Enabled=False)

"""What the tests of the CDK app share: synthesizing a mesh (in process with cdk-nag, or as `cdk synth`
runs the app), cfn-lint, and reading a template's resources and IAM statements."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk.assertions import Template
from cdk_nag import AwsSolutionsChecks

from asya.names import VERSION_TAG, mesh_prefix
from asya_cdk.loaded_mesh import LoadedMesh
from asya_cdk.stack import MeshStack

ROOT = Path(__file__).resolve().parents[2]


def cfn_lint(template: Path) -> subprocess.CompletedProcess[str]:
    """cfn-lint on a synthesized template (W3005 is a known false positive on CDK's output)."""
    command = [str(Path(sys.executable).parent / "cfn-lint"), "--ignore-checks", "W3005", "--", str(template)]
    return subprocess.run(command, capture_output=True, text=True, check=False)


def run_cdk_app(mesh: Path, outdir: Path) -> subprocess.CompletedProcess[str]:
    """The CDK app as `cdk synth -c mesh=<mesh>` runs it."""
    environment = {**os.environ, "CDK_CONTEXT_JSON": json.dumps({"mesh": str(mesh)}), "CDK_OUTDIR": str(outdir)}
    command = [sys.executable, "-m", "asya_cdk.app"]
    return subprocess.run(command, capture_output=True, text=True, env=environment, check=False)


def synthesize(mesh: LoadedMesh, outdir: Path) -> tuple[Template, dict[str, Any], Path]:
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    app = cdk.App(outdir=str(outdir), context={"aws:cdk:bundling-stacks": []})
    stack = MeshStack(app, mesh_prefix(mesh.config.namespace), mesh=mesh)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises if cdk-nag finds anything not acknowledged with a reason
    template = Template.from_stack(stack)
    return template, dict(template.to_json()), outdir


def resources(document: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {key: r["Properties"] for key, r in document["Resources"].items() if r["Type"] == kind}


def role_statements(document: dict[str, Any], role_prefix: str) -> list[dict[str, Any]]:
    policies = [
        p
        for p in resources(document, "AWS::IAM::Policy").values()
        if any(ref["Ref"].startswith(role_prefix) for ref in p["Roles"])
    ]
    return [s for p in policies for s in p["PolicyDocument"]["Statement"]]


def actions_of(statements: list[dict[str, Any]]) -> set[str]:
    return {a for s in statements for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}


def version_tags(document: dict[str, Any]) -> dict[str, str | None]:
    """Each tagged resource of a template and its `asya:version` tag (None where it has other tags only);
    tags are a list of `Key`/`Value` pairs on most resource types, a mapping on a few."""
    found: dict[str, str | None] = {}
    for key, resource in document["Resources"].items():
        tags = resource.get("Properties", {}).get("Tags")
        if isinstance(tags, list):
            found[key] = {tag["Key"]: tag["Value"] for tag in tags}.get(VERSION_TAG)
        elif isinstance(tags, dict):
            found[key] = tags.get(VERSION_TAG)
    return found


def managed_statements(document: dict[str, Any], role_prefix: str) -> list[dict[str, Any]]:
    """The statements of the customer-managed policies the template attaches to a role (a mesh's queue
    grants: `asya_cdk.queue_grants`)."""
    managed = resources(document, "AWS::IAM::ManagedPolicy")
    roles = {key: r for key, r in resources(document, "AWS::IAM::Role").items() if key.startswith(role_prefix)}
    refs = {arn["Ref"] for r in roles.values() for arn in r.get("ManagedPolicyArns", []) if "Ref" in arn}
    return [s for key in sorted(refs & managed.keys()) for s in managed[key]["PolicyDocument"]["Statement"]]


def queue_names(statement: dict[str, Any]) -> list[str]:
    """The queue names a statement's resources end with (`arn:...:<account>:<queue name>`)."""
    listed = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
    return [r["Fn::Join"][1][-1].removeprefix(":") if isinstance(r, dict) else r.rsplit(":", 1)[-1] for r in listed]

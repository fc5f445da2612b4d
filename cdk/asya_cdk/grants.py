"""What an actor's role may reach beyond the mesh, from the mesh file: its own IAM grants
(`permissions`), the secrets it reads at its start (`secrets`) and the files it loads then (`files`).

Each grant is exactly what the field names: a secret by its name (Secrets Manager adds a six-character
suffix to every secret's ARN, hence `-??????`) or its ARN, a parameter by its name, a KMS key only
when named (a secret's or a file's `kms_key`, used through that service only); a shipped file by its
asset object, an `s3://` object by its key, a prefix by its objects and a listing of that prefix only.
cdk-nag's findings on them are acknowledged with the reason the mesh file gives, or, for a wildcard it
needs no reason for (a prefix, a secret's suffix), with the field that asked for it.
"""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3_assets as s3_assets
from constructs import Construct

from asya.startup import FileSource
from asya_cdk.loaded_mesh import LoadedMesh
from asya_cdk.needs import ManagedPolicy, SecretReference, Statement, s3_location


def grant_permissions(role: iam.Role, actor: str, grants: list[Statement | ManagedPolicy]) -> None:
    """The actor's `permissions`: its statements (placeholders filled at deploy) and managed policies."""
    for index, grant in enumerate(grants):
        field = f"actors.{actor}.permissions[{index}]"
        if isinstance(grant, ManagedPolicy):
            arn = cdk.Fn.sub(grant.managed_policy) if "${" in grant.managed_policy else grant.managed_policy
            role.add_managed_policy(iam.ManagedPolicy.from_managed_policy_arn(role, f"Permission{index}", arn))
            if grant.aws_managed:
                finding = f"AwsSolutions-IAM4[Policy::{_as_nag_writes(grant.managed_policy)}]"
                _acknowledge(role, finding, grant.reason, field)
            continue
        role.add_to_principal_policy(
            iam.PolicyStatement(
                effect=iam.Effect.ALLOW if grant.effect == "Allow" else iam.Effect.DENY,
                actions=grant.actions,
                resources=[cdk.Fn.sub(r) if "${" in r else r for r in grant.resources],
                conditions=grant.conditions or None,
            )
        )
        for action in grant.actions:
            if "*" in action:
                _acknowledge(role, f"AwsSolutions-IAM5[Action::{action}]", grant.reason, field)
        for resource in grant.resources:
            if "*" in resource:
                _acknowledge(role, f"AwsSolutions-IAM5[Resource::{_as_nag_writes(resource)}]", grant.reason, field)


def _as_nag_writes(resource: str) -> str:
    """A resource as cdk-nag quotes it in a finding: CloudFormation's placeholders as `<AWS::...>`."""
    for placeholder in ("AWS::Partition", "AWS::Region", "AWS::AccountId"):
        resource = resource.replace(f"${{{placeholder}}}", f"<{placeholder}>")
    return resource


def _acknowledge(role: iam.IRole, finding: str, reason: str | None, field: str) -> None:
    cdk.Validations.of(role).acknowledge(
        cdk.Acknowledgment(
            id=f"AwsSolutions::{finding}", reason=reason or f"Granted as the mesh file asks, in {field}."
        )
    )


def secret_arn(reference: SecretReference) -> str:
    """The ARN a grant on the secret names: the given one, or every version of the named secret
    (a secret's ARN ends with `-` and six characters Secrets Manager chooses)."""
    if reference.secret is not None:
        if reference.secret.startswith("arn:"):
            return reference.secret
        return f"{_here('secretsmanager')}:secret:{reference.secret}-??????"
    assert reference.parameter is not None
    return f"{_here('ssm')}:parameter/{reference.parameter.removeprefix('/')}"


def _here(service: str) -> str:
    """The start of an ARN of the stack's account and region."""
    return f"arn:{cdk.Aws.PARTITION}:{service}:{cdk.Aws.REGION}:{cdk.Aws.ACCOUNT_ID}"


def grant_secrets(role: iam.IRole, secrets: dict[str, SecretReference]) -> None:
    """Reading exactly the named secrets and parameters (parameters ten a call, `GetParameters`: see
    `asya.secret_reads`), and decrypting with the keys named for them, through their service only."""
    by_action: dict[str, list[str]] = {}
    keys: dict[str, set[str]] = {}
    for reference in secrets.values():
        service = "secretsmanager" if reference.secret is not None else "ssm"
        action = "secretsmanager:GetSecretValue" if reference.secret is not None else "ssm:GetParameters"
        by_action.setdefault(action, []).append(secret_arn(reference))
        if reference.kms_key:
            keys.setdefault(service, set()).add(reference.kms_key)
    for action, resources in sorted(by_action.items()):
        role.add_to_principal_policy(iam.PolicyStatement(actions=[action], resources=sorted(set(resources))))
    for service, service_keys in sorted(keys.items()):
        grant_decrypt(role, service_keys, service)


def grant_decrypt(role: iam.IRole, keys: set[str], service: str) -> None:
    """kms:Decrypt on customer managed keys, only when `service` (of the stack's region) asks KMS for
    the role: the role reads what those keys encrypt, it does not decrypt their ciphertext itself."""
    if keys:
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["kms:Decrypt"],
                resources=sorted(keys),
                conditions={"StringEquals": {"kms:ViaService": f"{service}.{cdk.Aws.REGION}.amazonaws.com"}},
            )
        )


def shipped_files(scope: Construct, mesh: LoadedMesh, actor: str, role: iam.IRole) -> dict[str, FileSource]:
    """The actor's files: local ones become assets (a folder's a zip), and the role may read each
    object, or list and read a prefix; what the sidecar is told (`ASYA_FILES`)."""
    assets: dict[str, s3_assets.Asset] = {}

    def asset_url(variable: str, path: Path) -> str:
        assets[variable] = s3_assets.Asset(scope, f"File-{variable}", path=str(path))
        return assets[variable].s3_object_url

    sources = mesh.file_sources(actor, asset_url)
    objects = [f"arn:{cdk.Aws.PARTITION}:s3:::{a.s3_bucket_name}/{a.s3_object_key}" for a in assets.values()]
    for variable, source in sources.items():
        if variable in assets:
            continue
        location = s3_location(source.url)
        assert location is not None  # a source that is not an asset is the mesh file's s3:// URL
        bucket, key = location
        if source.kind == "file":
            objects.append(f"arn:{cdk.Aws.PARTITION}:s3:::{bucket}/{key}")
            continue
        objects.append(f"arn:{cdk.Aws.PARTITION}:s3:::{bucket}/{key}*")
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["s3:ListBucket"],
                resources=[f"arn:{cdk.Aws.PARTITION}:s3:::{bucket}"],
                conditions={"StringLike": {"s3:prefix": [f"{key}*"]}},
            )
        )
        field = f"actors.{actor}.files.{variable}"
        _acknowledge(role, f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:s3:::{bucket}/{key}*]", None, field)
    if objects:
        role.add_to_principal_policy(iam.PolicyStatement(actions=["s3:GetObject"], resources=objects))
    entries = mesh.config.actors[actor].files.values()
    grant_decrypt(role, {entry.kms_key for entry in entries if entry.kms_key}, "s3")
    return sources

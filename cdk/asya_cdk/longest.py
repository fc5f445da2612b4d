"""The longest value of every name AWS generates for a mesh, and the environments they make.

The environment estimate builds each function's variables with `asya_cdk.environment`, the code the
CDK constructs use, but with every generated name at its longest possible length, so a mesh that
passes here cannot fail `CreateFunction` on Lambda's 4 KB environment limit. The bounds:

- the results bucket: CloudFormation generates its name; S3 bucket names are at most 63 characters;
- the tables: named `asya-<ns>-<table>` by the mesh (`asya.names`), so their length is exact;
- a role ARN: `arn:<partition>:iam::<12 digits>:role/<name>`, a role name at most 64 characters,
  with the longest partition;
- an asset URL: `s3://<bootstrap bucket>/<64 hex>.<ext>`, the bootstrap bucket a bucket name (63);
- an EMR Serverless application id: at most 64 characters (the API's own limit);
- the gateway's cursor secret: an ARN whose name CloudFormation generates from the logical id (at
  most 255 characters) and random characters.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from asya.names import (
    BATCHES_TABLE,
    EVENTS_TABLE,
    IDEMPOTENCY_TABLE,
    JOINS_TABLE,
    STATE_TABLE,
    SUMP_TABLE,
    TASKS_TABLE,
    mesh_prefix,
    resource_name,
)
from asya_cdk.environment import FunctionEnvironment, MeshNames, SparkNames, every_function
from asya_cdk.gateway_config import COGNITO_ADMIN_SCOPE, UserPoolNames
from asya_cdk.limits import (
    ACCOUNT_DIGITS,
    ASSET_HASH_LENGTH,
    BUCKET_NAME_MAX,
    COGNITO_CLIENT_ID_MAX,
    COGNITO_DOMAIN_PREFIX_MAX,
    COGNITO_POOL_ID_MAX,
    EMR_APPLICATION_ID_MAX,
    GENERATED_SECRET_NAME_MAX,
    LAMBDA_ENVIRONMENT_MAX_BYTES,
    LONGEST_PARTITION,
    LONGEST_REGION,
    ROLE_NAME_MAX,
)

if TYPE_CHECKING:
    from asya_cdk.loaded_mesh import LoadedMesh


def longest_role_arn() -> str:
    return f"arn:{LONGEST_PARTITION}:iam::{'0' * ACCOUNT_DIGITS}:role/{'r' * ROLE_NAME_MAX}"


def longest_asset_url(extension: str) -> str:
    return f"s3://{'b' * BUCKET_NAME_MAX}/{'0' * ASSET_HASH_LENGTH}.{extension}"


def longest_mesh_names(namespace: str) -> MeshNames:
    return MeshNames(
        bucket="b" * BUCKET_NAME_MAX,
        tasks_table=resource_name(namespace, TASKS_TABLE),
        events_table=resource_name(namespace, EVENTS_TABLE),
        idempotency_table=resource_name(namespace, IDEMPOTENCY_TABLE),
        batches_table=resource_name(namespace, BATCHES_TABLE),
        sump_table=resource_name(namespace, SUMP_TABLE),
        joins_table=resource_name(namespace, JOINS_TABLE),
        state_table=resource_name(namespace, STATE_TABLE),
        state_bucket="b" * BUCKET_NAME_MAX,
        user_pool=UserPoolNames(  # only read with gateway.jwt.cognito: the pool's issuer, client, admin scope
            issuer=f"https://cognito-idp.{LONGEST_REGION}.amazonaws.com.cn/{'p' * COGNITO_POOL_ID_MAX}",
            client="c" * COGNITO_CLIENT_ID_MAX,
            machine_client="c" * COGNITO_CLIENT_ID_MAX,
            admin_scope=f"{mesh_prefix(namespace)}/{COGNITO_ADMIN_SCOPE}",
            domain=f"https://{'d' * COGNITO_DOMAIN_PREFIX_MAX}.auth.{LONGEST_REGION}.amazoncognito.com",
        ),
        cursor_secret=f"arn:{LONGEST_PARTITION}:secretsmanager:{LONGEST_REGION}:{'0' * ACCOUNT_DIGITS}:secret:"
        f"{'s' * GENERATED_SECRET_NAME_MAX}-{'x' * 6}",
        seal_secret=f"arn:{LONGEST_PARTITION}:secretsmanager:{LONGEST_REGION}:{'0' * ACCOUNT_DIGITS}:secret:"
        f"{'s' * GENERATED_SECRET_NAME_MAX}-{'x' * 6}",
        # an Event API's domains: its 26-character id, the service's host, the region's DNS suffix
        fly_domain=f"{'a' * 26}.appsync-api.{LONGEST_REGION}.amazonaws.com.cn",
        fly_realtime_domain=f"{'a' * 26}.appsync-realtime-api.{LONGEST_REGION}.amazonaws.com.cn",
    )


def longest_spark_names(_actor: str) -> SparkNames:
    return SparkNames(
        application_id="a" * EMR_APPLICATION_ID_MAX,
        job_role_arn=longest_role_arn(),
        entry_point=longest_asset_url("py"),
        code_url=longest_asset_url("zip"),
        environment_url=longest_asset_url("zip"),
    )


def longest_file_url(_variable: str, path: Path) -> str:
    """A shipped file's asset URL at its longest: a folder's asset is a zip, a file's keeps its extension."""
    return longest_asset_url("zip" if path.is_dir() else path.suffix.removeprefix(".") or "bin")


def environment_size(variables: dict[str, str]) -> int:
    """What Lambda counts against its limit: every key and value, in UTF-8 bytes."""
    return sum(len(key.encode()) + len(value.encode()) for key, value in variables.items())


def longest_environments(mesh: LoadedMesh) -> list[tuple[FunctionEnvironment, int]]:
    """Every function of the mesh and the largest its environment can be once deployed."""
    functions = every_function(mesh, longest_mesh_names(mesh.config.namespace), longest_spark_names, longest_file_url)
    return [(function, environment_size(function.variables)) for function in functions]


def environment_problems(mesh: LoadedMesh) -> list[str]:
    """`<field>: <what is wrong>` for each function whose environment could exceed Lambda's limit."""
    problems = []
    for function, size in longest_environments(mesh):
        if size <= LAMBDA_ENVIRONMENT_MAX_BYTES:
            continue
        largest = sorted(function.variables.items(), key=lambda item: -len(item[0].encode() + item[1].encode()))
        named = ", ".join(f"{key} {len(key.encode()) + len(value.encode()):,}" for key, value in largest[:3])
        problems.append(
            f"{function.field}: {function.what}'s environment ({function.function}) would be up to {size:,} bytes, "
            f"over Lambda's {LAMBDA_ENVIRONMENT_MAX_BYTES:,}-byte limit for all of a function's variables "
            f"(largest: {named}); shorten or remove variables"
        )
    return problems

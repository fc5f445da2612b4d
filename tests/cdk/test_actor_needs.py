"""What a real actor needs, from the mesh file to the template: libraries, an image, files, permissions,
secrets, a VPC, warm capacity, /tmp and layers. Malformed fields fail the load naming the field; good
ones become exactly the grants and settings they describe, and cdk-nag passes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template
from cdk_nag import AwsSolutionsChecks

from asya.gathering import completing_seconds
from asya.startup import decode_files, decode_secrets
from asya_cdk.loaded_mesh import LoadedMesh
from asya_cdk.loading import MeshConfigError, load_mesh
from asya_cdk.stack import MeshStack

HEAD = "namespace: real\nactors:\n"


def _mesh(tmp_path: Path, actors: str, more: str = "") -> Path:
    (tmp_path / "code").mkdir(exist_ok=True)
    (tmp_path / "code" / "mod.py").write_text("def fn(payload):\n    return payload\n")
    path = tmp_path / "mesh.yaml"
    path.write_text(HEAD + actors + more)
    return path


@pytest.mark.parametrize(
    ("actor", "fragment"),
    [
        (
            "  a: {handler: mod.fn, code: code, requirements: ['numpy=>2']}",
            "actors.a.requirements[0]: 'numpy=>2' is not a requirement",
        ),
        (
            "  a: {handler: mod.fn, code: code, permissions: [{actions: [s3GetObject], resources: ['*']}]}",
            "actors.a.permissions[0].actions[0]: 's3GetObject' is not an IAM action",
        ),
        (
            "  a: {handler: mod.fn, code: code, permissions: [{actions: 's3:GetObject', resources: ['*']}]}",
            "actors.a.permissions[0].actions: Input should be a valid list",
        ),
        (
            "  a: {handler: mod.fn, code: code, permissions: [{actions: ['s3:GetObject'], resources: [my-bucket]}]}",
            "actors.a.permissions[0].resources[0]: 'my-bucket' is not an ARN",
        ),
        (
            "  a: {handler: mod.fn, code: code, permissions: [{actions: ['s3:GetObject'], resources: ['*']}]}",
            "actors.a.permissions[0]: reason: this statement allows '*'",
        ),
        (
            "  a: {handler: mod.fn, code: code, permissions: [{actions: ['s3:*'], resources: ['arn:aws:s3:::b/*']}]}",
            "reason: this statement allows 's3:*'",
        ),
        (
            "  a: {handler: mod.fn, code: code, permissions: [{actions: ['s3:GetObject'],"
            " resources: ['arn:${AWS::Partition}:s3:::${Bucket}/*']}]}",
            "${Bucket} is not a placeholder CloudFormation fills here",
        ),
        (
            "  a: {handler: mod.fn, code: code,"
            " permissions: [{managed_policy: 'arn:aws:iam::aws:policy/ReadOnlyAccess'}]}",
            "actors.a.permissions[0]: reason: an AWS managed policy grants what AWS decides",
        ),
        (
            "  a: {handler: mod.fn, code: code, permissions: [{managed_policy: ReadOnlyAccess}]}",
            "'ReadOnlyAccess' is not a managed policy ARN",
        ),
        ("  a: {handler: mod.fn, code: code, secrets: {KEY: {}}}", "actors.a.secrets.KEY: name a Secrets"),
        (
            "  a: {handler: mod.fn, code: code, secrets: {KEY: {secret: s, kms_key: alias/mine}}}",
            "kms_key: 'alias/mine' is not a KMS key ARN",
        ),
        ("  a: {handler: mod.fn, code: code, secrets: {AWS_KEY: s}}", "AWS_KEY are set by the mesh or by Lambda"),
        (
            "  a: {handler: mod.fn, code: code, environment: {KEY: x}, secrets: {KEY: s}}",
            "actors.a: secrets: KEY also in environment",
        ),
        (
            "  a: {handler: mod.fn, code: code, files: {MODEL: s3://}}",
            "MODEL: 's3://' is not an s3://<bucket>/<key> URL",
        ),
        (
            "  a: {handler: mod.fn, code: code, files: {MODEL: {source: s3://models/m.bin, kms_key: alias/mine}}}",
            "actors.a.files.MODEL: kms_key: 'alias/mine' is not a KMS key ARN",
        ),
        ("  a: {handler: mod.fn, code: code, files: {MODEL: missing.bin}}", "actors.a.files.MODEL: 'missing.bin' is"),
        (
            "  a: {handler: mod.fn, code: code, vpc: {subnets: [subnet-12], security_groups: [sg-0123456789abcdef0]}}",
            "actors.a.vpc.subnets[0]: String should match pattern",
        ),
        ("  a: {handler: mod.fn, code: code, layers: [my-layer]}", "'my-layer' is not a layer version ARN"),
        (
            "  a: {handler: mod.fn, code: code, package: image,"
            " layers: ['arn:aws:lambda:eu-west-1:123456789012:layer:x:1']}",
            "layers: a container image function has no layers",
        ),
        ("  a: {handler: mod.fn, code: code, ephemeral_storage: 256}", "actors.a.ephemeral_storage: Input should be"),
        (
            "  a: {handler: mod.fn, code: code, reserved_concurrency: 2, provisioned_concurrency: 3}",
            "provisioned_concurrency: 3 is above reserved_concurrency 2",
        ),
        (
            "  a: {handler: mod.fn, code: code, runtime: spark, secrets: {KEY: s}}",
            "secrets: for Lambda actors; a Spark actor's handler runs in its EMR Serverless job",
        ),
    ],
)
def test_a_malformed_need_names_its_field(tmp_path: Path, actor: str, fragment: str) -> None:
    with pytest.raises(MeshConfigError) as raised:
        load_mesh(_mesh(tmp_path, actor + "\n"))
    assert fragment in str(raised.value)


def test_libraries_are_declared_in_one_place(tmp_path: Path) -> None:
    path = _mesh(tmp_path, "  a: {handler: mod.fn, code: code, requirements: [numpy==2.3.1]}\n")
    (tmp_path / "code" / "requirements.txt").write_text("numpy==2.3.1\n")
    with pytest.raises(MeshConfigError, match=r"actors.a.requirements: .*requirements.txt declares this actor"):
        load_mesh(path)
    (tmp_path / "mesh.yaml").write_text(HEAD + "  a: {handler: mod.fn, code: code}\n")
    declared = load_mesh(path).requirements("a")
    assert declared.files == (tmp_path / "code" / "requirements.txt",)
    assert declared.named() == {"numpy"}


def test_files_size_tmp_and_a_set_size_too_small_is_refused(tmp_path: Path) -> None:
    (tmp_path / "model").mkdir()
    with (tmp_path / "model" / "weights.bin").open("wb") as weights:
        weights.truncate(300 * 2**20)  # a 300 MiB folder: 600 MiB while it is unpacked
    mesh = load_mesh(_mesh(tmp_path, "  a: {handler: mod.fn, code: code, files: {MODEL_DIR: model}}\n"))
    assert mesh.ephemeral_storage("a") == 600 + 64
    with pytest.raises(MeshConfigError, match=r"actors.a.ephemeral_storage: 600 MB cannot hold its files"):
        load_mesh(
            _mesh(tmp_path, "  a: {handler: mod.fn, code: code, files: {MODEL_DIR: model}, ephemeral_storage: 600}\n")
        )


def _synthesize(mesh: LoadedMesh, outdir: Path) -> dict[str, Any]:
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    app = cdk.App(outdir=str(outdir), context={"aws:cdk:bundling-stacks": []})
    stack = MeshStack(app, f"asya-{mesh.config.namespace}", mesh=mesh)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises if cdk-nag finds anything not acknowledged with a reason
    return dict(Template.from_stack(stack).to_json())


NEEDS = """\
  reader:
    handler: mod.fn
    code: code
    files:
      MODEL_PATH: model.bin
      VOCAB_DIR: vocab
      LABELS: s3://their-bucket/labels/v3.json
      SHARDS:
        source: s3://their-bucket/shards/
        kms_key: arn:aws:kms:eu-west-1:123456789012:key/9f8e7d6c-1111-2222-3333-444455556666
    secrets:
      API_KEY: vendor/api-key
      DB_PASSWORD:
        parameter: /real/db-password
        kms_key: arn:aws:kms:eu-west-1:123456789012:key/0a1b2c3d-1111-2222-3333-444455556666
      TOKEN: {secret: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:shared/token-AbCdEf', key: token}
    permissions:
      - actions: [s3:GetObject]
        resources: ['arn:${AWS::Partition}:s3:::my-reference/teams/*']
      - actions: ['bedrock:InvokeModel']
        resources: ['*']
        reason: The actor picks the foundation model per task from the payload
      - managed_policy: arn:aws:iam::aws:policy/AmazonTextractFullAccess
        reason: Textract's asynchronous jobs need its service actions
    vpc: {subnets: [subnet-0a1b2c3d4e5f60718, subnet-0f1e2d3c], security_groups: [sg-0123456789abcdef0]}
    provisioned_concurrency: 2
    ephemeral_storage: 2048
    layers: ['arn:aws:lambda:eu-west-1:123456789012:layer:ffmpeg:3']
  imaged:
    handler: mod.fn
    code: code
    package: image
"""


@pytest.fixture(scope="module")
def needs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("needs")
    (folder / "model.bin").write_bytes(b"\x00" * 1024)
    (folder / "vocab").mkdir()
    (folder / "vocab" / "words.txt").write_text("alpha\n")
    return _synthesize(load_mesh(_mesh(folder, NEEDS)), tmp_path_factory.mktemp("cdk.out"))


def _function(document: dict[str, Any], name: str) -> tuple[str, dict[str, Any]]:
    return next(
        (key, resource["Properties"])
        for key, resource in document["Resources"].items()
        if resource["Type"] == "AWS::Lambda::Function" and resource["Properties"].get("FunctionName") == name
    )


def _statements(document: dict[str, Any], role: str) -> list[dict[str, Any]]:
    return [
        statement
        for resource in document["Resources"].values()
        if resource["Type"] == "AWS::IAM::Policy" and {"Ref": role} in resource["Properties"]["Roles"]
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]
    ]


def _by_action(statements: list[dict[str, Any]], action: str) -> list[dict[str, Any]]:
    return [s for s in statements if action in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])]


def test_an_actor_starts_from_asya_actor_with_its_secrets_and_files_located_not_valued(needs: dict[str, Any]) -> None:
    _, function = _function(needs, "asya-real-reader")
    assert function["Handler"] == "asya.actor.lambda_handler"
    variables = function["Environment"]["Variables"]
    assert decode_secrets(variables["ASYA_SECRETS"]) == {
        "API_KEY": "secretsmanager:vendor/api-key",
        "DB_PASSWORD": "ssm:/real/db-password",
        "TOKEN": "secretsmanager:arn:aws:secretsmanager:eu-west-1:123456789012:secret:shared/token-AbCdEf#token",
    }
    files = variables["ASYA_FILES"]  # with asset URLs in it, a token CloudFormation joins
    joined = "".join(part if isinstance(part, str) else "<asset>" for part in files["Fn::Join"][1])
    located = decode_files(joined.replace("<asset>", "s3://assets/key"))
    assert {variable: (f.name, f.kind) for variable, f in located.items()} == {
        "MODEL_PATH": ("model.bin", "file"),
        "VOCAB_DIR": ("vocab", "zip"),
        "LABELS": ("v3.json", "file"),
        "SHARDS": ("shards", "prefix"),
    }
    assert located["LABELS"].url == "s3://their-bucket/labels/v3.json"


def test_the_role_reads_exactly_its_secrets_files_and_granted_resources(needs: dict[str, Any]) -> None:
    _, function = _function(needs, "asya-real-reader")
    role = function["Role"]["Fn::GetAtt"][0]
    statements = _statements(needs, role)
    text = json.dumps(statements)
    secrets, seal = sorted(
        _by_action(statements, "secretsmanager:GetSecretValue"), key=lambda s: "SealSecret" in str(s)
    )
    assert "SealSecret" in json.dumps(seal["Resource"])  # the mesh's own, every function's (`asya.seal`)
    assert "secret:vendor/api-key-??????" in json.dumps(secrets["Resource"])
    assert "arn:aws:secretsmanager:eu-west-1:123456789012:secret:shared/token-AbCdEf" in json.dumps(secrets["Resource"])
    (parameter,) = _by_action(statements, "ssm:GetParameters")  # ten a call, at every cold start
    assert ":parameter/real/db-password" in json.dumps(parameter["Resource"])
    (listing,) = _by_action(statements, "s3:ListBucket")
    assert listing["Condition"] == {"StringLike": {"s3:prefix": ["shards/*"]}}
    objects = json.dumps([s["Resource"] for s in _by_action(statements, "s3:GetObject")])
    for wanted in ("their-bucket/labels/v3.json", "their-bucket/shards/*", "my-reference/teams/*"):
        assert wanted in objects
    assert "${AWS::Partition}" in text, "placeholders are filled by CloudFormation (Fn::Sub)"
    assert _by_action(statements, "bedrock:InvokeModel")[0]["Resource"] == "*"
    managed = json.dumps(needs["Resources"][role]["Properties"]["ManagedPolicyArns"])
    assert "AmazonTextractFullAccess" in managed
    assert "service-role/AWSLambdaVPCAccessExecutionRole" in managed


def test_customer_keys_decrypt_through_their_service_only(needs: dict[str, Any]) -> None:
    """A parameter's key and a bucket's key are each usable by the role only as SSM or S3 reads."""
    _, function = _function(needs, "asya-real-reader")
    decrypts = _by_action(_statements(needs, function["Role"]["Fn::GetAtt"][0]), "kms:Decrypt")
    via = {
        statement["Resource"]: json.dumps(statement["Condition"]["StringEquals"]["kms:ViaService"])
        for statement in decrypts
    }
    assert via.keys() == {
        "arn:aws:kms:eu-west-1:123456789012:key/0a1b2c3d-1111-2222-3333-444455556666",
        "arn:aws:kms:eu-west-1:123456789012:key/9f8e7d6c-1111-2222-3333-444455556666",
    }
    assert '"ssm."' in via["arn:aws:kms:eu-west-1:123456789012:key/0a1b2c3d-1111-2222-3333-444455556666"]
    assert '"s3."' in via["arn:aws:kms:eu-west-1:123456789012:key/9f8e7d6c-1111-2222-3333-444455556666"]


def test_network_capacity_storage_and_layers_reach_the_function(needs: dict[str, Any]) -> None:
    _, function = _function(needs, "asya-real-reader")
    assert function["VpcConfig"] == {
        "SubnetIds": ["subnet-0a1b2c3d4e5f60718", "subnet-0f1e2d3c"],
        "SecurityGroupIds": ["sg-0123456789abcdef0"],
    }
    assert function["EphemeralStorage"] == {"Size": 2048}
    assert function["Layers"][1] == "arn:aws:lambda:eu-west-1:123456789012:layer:ffmpeg:3"
    (alias,) = [r["Properties"] for r in needs["Resources"].values() if r["Type"] == "AWS::Lambda::Alias"]
    assert (alias["Name"], alias["ProvisionedConcurrencyConfig"]) == ("live", {"ProvisionedConcurrentExecutions": 2})
    mappings = [r["Properties"] for r in needs["Resources"].values() if r["Type"] == "AWS::Lambda::EventSourceMapping"]
    reader = [m for m in mappings if "reader" in json.dumps(m["EventSourceArn"])]
    assert reader, "the reader's queue has an event source"
    assert json.dumps(reader[0]["FunctionName"]).endswith('":live"]]}'), "the event source invokes the alias"


def test_an_image_actor_is_a_container_image_function_on_the_same_entry_point(needs: dict[str, Any]) -> None:
    _, function = _function(needs, "asya-real-imaged")
    assert function["PackageType"] == "Image"
    assert function["ImageConfig"] == {"Command": ["asya.actor.lambda_handler"]}
    assert "Layers" not in function
    assert "Handler" not in function
    assert function["Architectures"] == ["arm64"]


def test_local_secret_values_never_ship_with_the_code(tmp_path: Path) -> None:
    """An actor whose code is the mesh file's own folder would otherwise ship `.asya/secrets.yaml`."""
    (tmp_path / ".asya").mkdir()
    (tmp_path / ".asya" / "secrets.yaml").write_text("shop/api-key: v4lue\n")
    (tmp_path / "mod.py").write_text("def fn(payload):\n    return payload\n")
    (tmp_path / "mesh.yaml").write_text(HEAD + "  a: {handler: mod.fn, code: .}\n")
    outdir = tmp_path / "cdk.out"
    template = _synthesize(load_mesh(tmp_path / "mesh.yaml"), outdir)
    _, function = _function(template, "asya-real-a")
    staged = outdir / f"asset.{function['Code']['S3Key'].removesuffix('.zip')}"
    assert (staged / "mod.py").exists()
    assert not (staged / ".asya").exists()
    (tmp_path / "mesh.yaml").write_text(HEAD + "  a: {handler: mod.fn, code: .}\nlocal: {secrets_file: dev.yaml}\n")
    with pytest.raises(MeshConfigError, match=r"local.secrets_file: .*dev.yaml is inside actors.a.code"):
        load_mesh(tmp_path / "mesh.yaml")


def test_a_join_too_wide_for_its_function_timeout_is_refused(tmp_path: Path) -> None:
    actors = (
        "  s: {handler: mod.fn, code: code}\n"
        "  j: {handler: mod.fn, code: code, function_timeout: 60, join: {branches_of: s, max_width: 10000}}\n"
    )
    with pytest.raises(MeshConfigError, match=r"actors.j.join.max_width: the completing arrival of a fan of 10,000"):
        load_mesh(_mesh(tmp_path, actors))
    narrower = actors.replace("max_width: 10000", "max_width: 2000")
    assert load_mesh(_mesh(tmp_path, narrower)).config.actors["j"].join_width == 2000


def test_a_join_without_max_width_takes_the_widest_fan_its_function_timeout_fits(tmp_path: Path) -> None:
    """A short-lived join (function_timeout 60) is not refused for a width nobody set: it takes the
    widest fan read back in 30 s, and its sidecar is told so; a long-lived one takes 10,000."""
    actors = (
        "  s: {handler: mod.fn, code: code}\n"
        "  j: {handler: mod.fn, code: code, function_timeout: 60, join: {branches_of: s}}\n"
        "  k: {handler: mod.fn, code: code, function_timeout: 900, join: {branches_of: s}}\n"
    )
    loaded = load_mesh(_mesh(tmp_path, actors))
    short, long = (loaded.config.actors[name].join_width for name in ("j", "k"))
    assert (completing_seconds(short) <= 30 < completing_seconds(short + 1), long) == (True, 10_000)
    assert loaded.join_environment("j", {})["ASYA_JOIN_MAX_WIDTH"] == str(short)
    assert "ASYA_JOIN_MAX_WIDTH" not in loaded.join_environment("k", {})


def test_a_container_join_is_sized_by_its_batch_clock_not_a_lambda_batch(tmp_path: Path) -> None:
    """A container join's consumer takes one envelope at a time: its batch has `timeout` and 10 s (70 s
    here), not the ten envelopes' time a Lambda batch would, so its widest fan is read back in 35 s."""
    vpc = "vpc: {subnets: [subnet-0123456789abcdef0], security_groups: [sg-0123456789abcdef0]}"
    actors = (
        "  s: {handler: mod.fn, code: code}\n"
        f"  j: {{handler: mod.fn, code: code, runtime: container, timeout: 60, {vpc}, join: {{branches_of: s}}}}\n"
    )
    width = load_mesh(_mesh(tmp_path, actors)).config.actors["j"].join_width
    assert completing_seconds(width) <= 35 < completing_seconds(width + 1)
    wide = actors.replace("join: {branches_of: s}", "join: {branches_of: s, max_width: 10000}")
    with pytest.raises(MeshConfigError, match=r"half the join's batch time \(70 s\).*raise timeout"):
        load_mesh(_mesh(tmp_path, wide))

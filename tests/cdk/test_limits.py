"""The environment estimate against the real thing: every function of the synthesized examples, its
deploy-time names resolved to realistic long values, is no larger than the estimate `load_mesh`
checks; and each AWS rule refuses a mesh naming the field."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from asya.variables import GATEWAY_CURSOR_SECRET, SEAL_SECRET
from asya_cdk.limits import GENERATED_SECRET_NAME_MAX, LAMBDA_ENVIRONMENT_MAX_BYTES
from asya_cdk.loading import MeshConfigError, load_mesh
from asya_cdk.longest import environment_size, longest_environments
from asya_cdk.rules import redrive_retention_problems
from asya_local.deploy import synthesize

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = [ROOT / "examples" / "catalogue" / "mesh.yaml", ROOT / "examples" / "reviews" / "mesh.yaml"]
MESHES = Path(__file__).resolve().parent / "meshes"

# What a deployment in a long-named region and partition would really get (not the estimate's bounds)
PSEUDO = {"AWS::Region": "ap-southeast-5", "AWS::AccountId": "123456789012", "AWS::Partition": "aws-us-gov"}
BUCKET = "asya-catalogue-meshresults1a2b3c4d-abcdefghij12"  # CloudFormation's <stack>-<id>-<random> form
APPLICATION_ID = "00fq8r2m4n6p8s0t"  # EMR Serverless ids are 16 characters
SECRET_ARN = (  # a secret CloudFormation names: <logical id>-<12 random>, and the ARN's -<6 random>
    "arn:aws-us-gov:secretsmanager:ap-southeast-5:123456789012:secret:MeshGatewayCursorSecret0A1B2C3D-AbCdEfGhIjKl-XyZ123"
)
ROLE_ARN = "arn:aws-us-gov:iam::123456789012:role/" + "asya-catalogue-MeshSparkscoreJobRole0123456-ABCDEFGHIJKLMN"[:64]
# FLY's Event API: AppSync's 26-character API id in its HTTP and real-time domains
EVENT_API_DNS = {
    "Dns.Http": "abcdefghijklmnopqrstuvwxyz.appsync-api.ap-southeast-5.amazonaws.com",
    "Dns.Realtime": "abcdefghijklmnopqrstuvwxyz.appsync-realtime-api.ap-southeast-5.amazonaws.com",
}


def _resolve(value: Any, resources: dict[str, Any]) -> str:
    """A CloudFormation value with its intrinsic functions replaced by realistic long values."""
    if isinstance(value, str):
        return value
    [(function, argument)] = value.items()
    if function == "Ref":
        if argument in PSEUDO:
            return PSEUDO[argument]
        kind = resources[argument]["Type"]
        if kind == "AWS::DynamoDB::Table":
            return str(resources[argument]["Properties"]["TableName"])
        named = {"AWS::S3::Bucket": BUCKET, "AWS::EMRServerless::Application": APPLICATION_ID}
        return {**named, "AWS::SecretsManager::Secret": SECRET_ARN}[kind]
    if function == "Fn::GetAtt":
        return {"Arn": ROLE_ARN, "ApplicationId": APPLICATION_ID, **EVENT_API_DNS}[argument[1]]
    if function == "Fn::Join":
        separator, parts = argument
        return str(separator).join(_resolve(part, resources) for part in parts)
    if function == "Fn::Sub":
        return re.sub(r"\$\{([^}]+)\}", lambda match: _resolve({"Ref": match.group(1)}, resources), argument)
    raise AssertionError(f"unexpected {function} in an environment")


@pytest.mark.parametrize("path", [*EXAMPLES, MESHES / "large-spark-environment.yaml"], ids=lambda p: p.parent.name)
def test_the_estimate_bounds_every_functions_real_environment(path: Path, tmp_path: Path) -> None:
    mesh = load_mesh(path)
    resources = synthesize(mesh, tmp_path).template["Resources"]
    real = {
        str(resource["Properties"]["FunctionName"]): {
            key: _resolve(value, resources)
            for key, value in resource["Properties"].get("Environment", {}).get("Variables", {}).items()
        }
        for resource in resources.values()
        # CDK's provider framework (behind the Spark guards) names its own function and sets its one variable
        if resource["Type"] == "AWS::Lambda::Function" and "FunctionName" in resource["Properties"]
    }
    [sump] = [
        r for r in resources.values() if r["Properties"].get("QueueName") == f"asya-{mesh.config.namespace}-x-sump"
    ]
    assert sump["Properties"]["MessageRetentionPeriod"] == 14 * 86_400, "x-sump outlives every queue redriving into it"
    estimated = {function.function: function for function, _ in longest_environments(mesh)}
    assert set(real) == set(estimated), "every function the mesh makes is estimated, and nothing else"
    for name, variables in real.items():
        assert set(variables) == set(estimated[name].variables), name
        size, bound = environment_size(variables), environment_size(estimated[name].variables)
        assert size <= bound <= LAMBDA_ENVIRONMENT_MAX_BYTES, name
        # a generated secret's name (the cursor's, the seal's) comes from its logical id, up to 255
        # characters in a team's own stack
        generated = sum(1 for key in variables if key in (GATEWAY_CURSOR_SECRET.name, SEAL_SECRET.name))
        secret_slack = (GENERATED_SECRET_NAME_MAX - len(SECRET_ARN.rsplit(":", 1)[1])) * generated
        slack = bound - size - secret_slack
        assert slack < 160, f"{name}: the bound is {slack} bytes above a realistic deployment"


def _refused(tmp_path: Path, text: str) -> str:
    path = tmp_path / "mesh.yaml"
    path.write_text(text)
    with pytest.raises(MeshConfigError) as caught:
        load_mesh(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ")
    return message


def _actor(settings: str, namespace: str = "shop", name: str = "a") -> str:
    return f"namespace: {namespace}\nactors:\n  {name}: {{handler: m.f, {settings}}}\n"


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ("function_timeout: 1.5s", "actors.a.function_timeout: 1.5 s is not a whole number of seconds, and Lambda's"),
        ("batching_window: 500ms", "actors.a.batching_window: 0.5 s is not a whole number of seconds, and the SQS"),
        ("retention: 90.5", "actors.a.retention: 90.5 s is not a whole number of seconds, and SQS's"),
    ],
)
def test_fields_that_reach_an_integer_aws_property_need_whole_seconds(
    tmp_path: Path, settings: str, field: str
) -> None:
    assert field in _refused(tmp_path, _actor(settings))


def test_a_fractional_actor_timeout_gives_a_whole_second_function_timeout(tmp_path: Path) -> None:
    path = tmp_path / "mesh.yaml"
    path.write_text(_actor("timeout: 0.3s, batch_size: 3"))
    actor = load_mesh(path).config.actors["a"]
    assert (actor.lambda_timeout, actor.visibility_timeout) == (11, 66)


def test_function_names_over_64_characters_are_refused_naming_the_actor(tmp_path: Path) -> None:
    namespace, actor = "n" * 40, "a" * 30
    message = _refused(tmp_path, _actor("", namespace=namespace, name=actor))
    assert f"actors.{actor}: the function name asya-{namespace}-{actor} is 76 characters; AWS allows 64" in message


def test_a_spark_collector_name_over_64_characters_is_refused(tmp_path: Path) -> None:
    namespace, actor = "n" * 30, "a" * 20  # the function fits (56), its collector does not (66)
    message = _refused(tmp_path, _actor("runtime: spark", namespace=namespace, name=actor))
    assert f"actors.{actor}: the collector function name asya-{namespace}-x-collect-{actor} is 66" in message


def test_reserved_concurrency_below_two_is_refused(tmp_path: Path) -> None:
    message = _refused(tmp_path, _actor("reserved_concurrency: 0"))
    assert "actors.a.reserved_concurrency: 0 is below 2" in message
    assert "disable its event source mapping" in message


def test_max_concurrency_above_reserved_concurrency_is_refused(tmp_path: Path) -> None:
    message = _refused(tmp_path, _actor("reserved_concurrency: 5, max_concurrency: 10"))
    assert "actors.a.max_concurrency: 10 is above reserved_concurrency 5" in message


def test_reserved_concurrency_alone_bounds_the_event_source(tmp_path: Path) -> None:
    path = tmp_path / "mesh.yaml"
    path.write_text(_actor("reserved_concurrency: 5"))
    assert load_mesh(path).config.actors["a"].event_source_concurrency == 5
    path.write_text(_actor("reserved_concurrency: 5000"))
    assert load_mesh(path).config.actors["a"].event_source_concurrency == 1000


def test_x_sump_must_keep_messages_as_long_as_the_queues_that_redrive_into_it() -> None:
    [problem] = redrive_retention_problems({"actors.a.retention": 7 * 86_400, "actors.b.retention": 60}, 4 * 86_400)
    assert problem.startswith("actors.a.retention: 604800 s is longer than x-sump keeps messages (345600 s)")


def test_a_spark_actors_environment_over_4_kb_is_refused_naming_the_field(tmp_path: Path) -> None:
    variables = ", ".join(f"VARIABLE_{i:02}: {'v' * 300}" for i in range(12))
    message = _refused(tmp_path, _actor(f"runtime: spark, environment: {{{variables}}}"))
    assert "actors.a.environment: the dispatcher's environment (asya-shop-a) would be up to 5," in message
    assert "actors.a.environment: the collector's environment (asya-shop-x-collect-a)" in message


@pytest.mark.parametrize(
    ("mesh", "refusal"),
    [
        ("thirty-lambda-actors.yaml", None),
        ("long-names.yaml", "actors.abcdefghijabcdefghijabcdefghij: the function name"),
        ("fractional-durations.yaml", "actors.a.batching_window: 0.5 s is not a whole number"),
        ("large-spark-environment.yaml", None),
        ("tracing.yaml", None),
    ],
)
def test_the_meshes_a_reviewer_checks_with_load_or_name_the_field(mesh: str, refusal: str | None) -> None:
    if refusal is None:
        load_mesh(MESHES / mesh)
        return
    with pytest.raises(MeshConfigError, match=re.escape(refusal)):
        load_mesh(MESHES / mesh)

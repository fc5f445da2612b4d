"""`runtime: spark` in the mesh file: its settings and their defaults, the dispatcher's timeout, the job's
environment, and the errors, each naming the file and the field (also when the CDK app reads the mesh)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from asya_cdk.actor_config import SPARK_DISPATCH_TIMEOUT, SparkConfig
from asya_cdk.config import MeshConfig
from asya_cdk.environment import spark_environment
from asya_cdk.loaded_mesh import LoadedMesh
from asya_cdk.loading import MeshConfigError, load_mesh
from asya_cdk.longest import longest_mesh_names, longest_spark_names
from asya_spark.settings import job_environment
from tests.support.templates import run_cdk_app

ROOT = Path(__file__).resolve().parents[2]
HEAD = "namespace: shop\nactors:\n"


def _write(tmp_path: Path, actors: str) -> Path:
    path = tmp_path / "mesh.yaml"
    path.write_text(HEAD + actors)
    return path


def _refused(path: Path) -> str:
    with pytest.raises(MeshConfigError) as caught:
        load_mesh(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ")
    return message


def test_spark_settings_without_the_spark_runtime_are_refused(tmp_path: Path) -> None:
    message = _refused(_write(tmp_path, "  a: {handler: m.f, spark: {style: dataframe}}\n"))
    assert "actors.a: " in message
    assert "spark: settings for a Spark actor; set runtime: spark, or remove them" in message
    explicit = _refused(_write(tmp_path, "  a: {handler: m.f, runtime: lambda, spark: {}}\n"))
    assert "actors.a: " in explicit
    assert "set runtime: spark" in explicit


def test_the_spark_runtime_without_settings_gets_the_defaults(tmp_path: Path) -> None:
    mesh = load_mesh(_write(tmp_path, "  a: {handler: m.f, runtime: spark}\n  b: {handler: m.f}\n"))
    spark = mesh.config.actors["a"].spark
    assert spark == SparkConfig()
    assert spark is not None
    assert (spark.style, spark.release, spark.python, spark.image_uri, spark.conf) == (
        "payload",
        "emr-7.12.0",
        "/usr/bin/python3.11",
        None,
        {},
    )
    assert (spark.max_vcpu, spark.max_memory_gb, spark.max_disk_gb) == (16, 64, 200)
    assert (spark.idle_minutes, spark.reconcile_minutes) == (15, 5)
    assert (spark.job_timeout, spark.job_timeout_minutes) == (3600.0, 60)
    assert mesh.config.actors["b"].spark is None, "a Lambda actor has no Spark settings"
    assert mesh.spark_actors == ["a"]


def test_spark_settings_are_read_with_durations(tmp_path: Path) -> None:
    text = (
        "  a: {handler: m.f, runtime: spark, spark: {style: dataframe, release: emr-6.15.0, max_vcpu: 4,"
        " job_timeout: 90m, conf: {spark.executor.cores: '2'}}}\n"
    )
    spark = load_mesh(_write(tmp_path, text)).config.actors["a"].spark
    assert spark is not None
    assert (spark.style, spark.release, spark.max_vcpu, spark.conf) == (
        "dataframe",
        "emr-6.15.0",
        4,
        {"spark.executor.cores": "2"},
    )
    assert (spark.job_timeout, spark.job_timeout_minutes) == (5400.0, 90)
    assert SparkConfig(job_timeout=3601).job_timeout_minutes == 61, "a started minute counts"
    assert SparkConfig(job_timeout="5m").job_timeout == 300.0, "300 s is the least allowed"


@pytest.mark.parametrize("release", ["7.12.0", "emr-7.12", "emr-latest", "EMR-7.12.0", "emr-7.12.0-beta"])
def test_a_release_must_be_an_emr_release_label(tmp_path: Path, release: str) -> None:
    message = _refused(_write(tmp_path, f"  a: {{handler: m.f, runtime: spark, spark: {{release: {release}}}}}\n"))
    assert "actors.a.spark.release: String should match pattern" in message


@pytest.mark.parametrize("timeout", ["299", "299s", "1s", "0"])
def test_a_job_timeout_below_five_minutes_is_refused(tmp_path: Path, timeout: str) -> None:
    message = _refused(_write(tmp_path, f"  a: {{handler: m.f, runtime: spark, spark: {{job_timeout: {timeout}}}}}\n"))
    assert "actors.a.spark.job_timeout: Input should be greater than or equal to 300" in message


@pytest.mark.parametrize("retention", ["59", "59s", "0"])
def test_a_queue_retention_below_a_minute_is_refused(tmp_path: Path, retention: str) -> None:
    message = _refused(_write(tmp_path, f"  a: {{handler: m.f, retention: {retention}}}\n"))
    assert "actors.a.retention: Input should be greater than or equal to 60" in message


@pytest.mark.parametrize(
    ("spark", "fragment"),
    [
        ("{job_timeout: 8d}", "actors.a.spark.job_timeout: '8d' is not a duration"),
        ("{job_timeout: 169h}", "actors.a.spark.job_timeout: Input should be less than or equal to 604800"),
        ("{style: sql}", "actors.a.spark.style: Input should be 'payload' or 'dataframe'"),
        ("{max_vcpu: 0}", "actors.a.spark.max_vcpu: Input should be greater than or equal to 1"),
        ("{max_memory_gb: 1}", "actors.a.spark.max_memory_gb: Input should be greater than or equal to 2"),
        ("{max_disk_gb: 10}", "actors.a.spark.max_disk_gb: Input should be greater than or equal to 20"),
        ("{idle_minutes: 0}", "actors.a.spark.idle_minutes: Input should be greater than or equal to 1"),
        ("{reconcile_minutes: 61}", "actors.a.spark.reconcile_minutes: Input should be less than or equal to 60"),
        ("{max_cpu: 4}", "actors.a.spark.max_cpu: not a field; did you mean `max_vcpu`?"),
    ],
)
def test_bad_spark_settings_name_the_field(tmp_path: Path, spark: str, fragment: str) -> None:
    assert fragment in _refused(_write(tmp_path, f"  a: {{handler: m.f, runtime: spark, spark: {spark}}}\n"))


def test_an_unknown_runtime_is_refused(tmp_path: Path) -> None:
    message = _refused(_write(tmp_path, "  a: {handler: m.f, runtime: flink}\n"))
    assert "actors.a.runtime: Input should be 'lambda', 'spark' or 'container'" in message


@pytest.mark.parametrize("name", ["x-collect-a", "x-spark", "x-"])
def test_actor_names_starting_with_x_are_refused(tmp_path: Path, name: str) -> None:
    """`asya-<ns>-x-collect-<actor>` is a Spark actor's collector: `x-` names belong to the mesh."""
    message = _refused(_write(tmp_path, f"  a: {{handler: m.f, runtime: spark}}\n  {name}: {{handler: m.f}}\n"))
    assert f"actors.{name}: actor names are lowercase letters, digits and '-', not starting with 'x-'" in message


def test_a_spark_dispatcher_times_out_after_five_minutes_unless_told_otherwise(tmp_path: Path) -> None:
    text = (
        "  a: {handler: m.f, runtime: spark, timeout: 10m, batch_size: 1000, batching_window: 2s}\n"
        "  b: {handler: m.f, runtime: spark, function_timeout: 120}\n"
        "  c: {handler: m.f, timeout: 30}\n"
    )
    actors = load_mesh(_write(tmp_path, text)).config.actors
    assert SPARK_DISPATCH_TIMEOUT == 300.0
    assert (actors["a"].lambda_timeout, actors["a"].visibility_timeout) == (300.0, 1800.0), "not timeout x batch"
    assert actors["a"].timeout == 600.0, "the per-envelope limit inside the job stays the actor's"
    assert (actors["b"].lambda_timeout, actors["b"].visibility_timeout) == (120.0, 720.0)
    assert (actors["c"].lambda_timeout, actors["c"].visibility_timeout) == (310.0, 1860.0), "Lambda actors unchanged"


def test_large_spark_batches_need_a_batching_window(tmp_path: Path) -> None:
    message = _refused(_write(tmp_path, "  a: {handler: m.f, runtime: spark, batch_size: 1000}\n"))
    assert "actors.a: " in message
    assert "batch_size above 10 needs a batching_window" in message


def test_the_job_environment_has_the_handler_settings_style_and_variables_but_no_tables(tmp_path: Path) -> None:
    text = (
        "  a:\n    handler: m.Model.score\n    runtime: spark\n    handler_mode: envelope\n    timeout: 45s\n"
        "    environment: {MODEL: small}\n    spark: {style: dataframe}\n"
        "    resiliency: {policies: {default: {max_attempts: 2}}}\n"
    )
    mesh = load_mesh(_write(tmp_path, text + "status: {writes: every-point}\n"))
    functions = spark_environment(mesh, "a", longest_mesh_names("shop"), longest_spark_names("a"))
    assert functions["ASYA_SPARK_JOB_VARIABLES"] == "MODEL"
    environment = job_environment(functions)
    resiliency = environment.pop("ASYA_RESILIENCY")
    assert environment == {
        "MODEL": "small",
        "ASYA_NAMESPACE": "shop",
        "ASYA_ACTOR_NAME": "a",
        "ASYA_HANDLER": "m.Model.score",
        "ASYA_HANDLER_MODE": "envelope",
        "ASYA_ACTOR_TIMEOUT_SECONDS": "45",
        "ASYA_SPARK_STYLE": "dataframe",
        # large payloads travel in S3, but the job never calls AWS: the dispatcher stages them whole and
        # the collector checks the job's large outputs in, so the job holds none back
        "ASYA_MAX_MESSAGE_BYTES": str(5 * 1024**3),
    }
    assert json.loads(resiliency)["policies"]["default"]["max_attempts"] == 2
    assert {"ASYA_TASKS_TABLE", "ASYA_EVENTS_TABLE"} <= set(functions)
    assert "ASYA_IDEMPOTENCY_TABLE" not in functions, "hop claims replace the idempotency table"
    assert "ASYA_SPARK_STYLE" not in mesh.actor_environment("a", {}), "the style is the job's, not a Lambda actor's"


def test_the_default_style_is_per_payload() -> None:
    config = MeshConfig.model_validate({"namespace": "n", "actors": {"a": {"handler": "m.f", "runtime": "spark"}}})
    mesh = LoadedMesh(config=config, base=ROOT)
    functions = spark_environment(mesh, "a", longest_mesh_names("n"), longest_spark_names("a"))
    assert job_environment(functions)["ASYA_SPARK_STYLE"] == "payload"
    assert "ASYA_SPARK_JOB_VARIABLES" not in functions, "no variables of its own, nothing to forward"


def test_cdk_app_refuses_a_bad_spark_mesh_naming_the_field(tmp_path: Path) -> None:
    bad = _write(tmp_path, "  clean: {handler: m.f, runtime: spark, spark: {style: sql}}\n")
    result = run_cdk_app(bad, tmp_path / "out")
    assert result.returncode != 0
    assert f"{bad}: actors.clean.spark.style: Input should be 'payload' or 'dataframe'" in result.stderr
    assert not (tmp_path / "out" / "asya-shop.template.json").exists()


def test_the_job_image_provides_the_default_interpreter_for_the_default_release() -> None:
    """`asya_spark_job/image/Dockerfile` is what docs/spark.md tells a deployment to build: the EMR
    Serverless base image of the default release, with Amazon Linux's python3.11 at `spark.python`."""
    from asya_cdk.sources import package_folder

    dockerfile = (package_folder("asya_spark_job") / "image" / "Dockerfile").read_text()
    defaults = SparkConfig()
    assert f"ARG RELEASE={defaults.release}\n" in dockerfile
    assert "FROM public.ecr.aws/emr-serverless/spark/${RELEASE}:latest\n" in dockerfile
    assert "dnf install -y python3.11" in dockerfile
    assert f"{defaults.python} --version" in dockerfile
    assert dockerfile.rstrip().endswith("USER hadoop:hadoop")

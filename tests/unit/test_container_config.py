"""`runtime: container` in the mesh file (docs/mesh.md, "Container actors"): its defaults, and every
setting ECS or Fargate would refuse named by its field when the file is read, as `asya check` and
`cdk synth` read it."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from asya.container_variables import HOP_TIME_LIMIT
from asya_cdk.cautions import mesh_warnings
from asya_cdk.container import consumer_environment
from asya_cdk.container_config import ContainerConfig
from asya_cdk.loading import MeshConfigError, load_mesh
from asya_cdk.rules import mesh_problems

VPC = "vpc: {subnets: [subnet-0a1b2c3d], security_groups: [sg-0a1b2c3d]}"


def _load(tmp_path: Path, actor: str) -> Path:
    (tmp_path / "mod.py").write_text("def fn(payload):\n    return payload\n")
    path = tmp_path / "mesh.yaml"
    path.write_text(f"namespace: boxes\nactors:\n  a: {{handler: mod.fn, runtime: container, {actor}}}\n")
    return path


def test_a_container_actor_runs_its_image_on_fargate_from_zero(tmp_path: Path) -> None:
    settings = load_mesh(_load(tmp_path, VPC)).config.actors["a"]
    container = settings.container
    assert container is not None
    assert (settings.package, container.cpu, container.memory, container.gpu) == ("image", 1, 2048, 0)
    assert (container.min, container.max, container.messages_per_task, container.concurrency) == (0, 4, 10, 1)
    assert (container.stop_timeout, settings.visibility_timeout) == (120, 120), "the queue is hidden by heartbeats"


def test_a_container_hop_may_run_for_hours_and_a_lambda_hop_may_not(tmp_path: Path) -> None:
    assert load_mesh(_load(tmp_path, f"{VPC}, timeout: 4h")).config.actors["a"].timeout == 14_400
    lambda_mesh = tmp_path / "lambda.yaml"
    lambda_mesh.write_text("namespace: boxes\nactors:\n  a: {handler: mod.fn, timeout: 1h}\n")
    with pytest.raises(MeshConfigError, match=r"actors\.a: timeout: 3600 s is above Lambda's 900; a longer hop needs"):
        load_mesh(lambda_mesh)


@pytest.mark.parametrize(
    ("actor", "fragment"),
    [
        (
            f"{VPC}, container: {{cpu: 3}}",
            "actors.a.container: cpu: 3 vCPU is not a Fargate size; one of 0.25, 0.5, 1, 2, 4, 8, 16",
        ),
        (
            f"{VPC}, container: {{cpu: 1, memory: 1024}}",
            "memory: 1024 MiB does not go with cpu 1 on Fargate: 2048 to 8192 MiB in steps of 1024",
        ),
        (
            f"{VPC}, container: {{cpu: 0.25, memory: 1536}}",
            "memory: 1536 MiB does not go with cpu 0.25 on Fargate: 512, 1024, 2048 MiB",
        ),
        (
            f"{VPC}, container: {{cpu: 16, memory: 40000}}",
            "memory: 40000 MiB does not go with cpu 16 on Fargate: 32768 to 122880 MiB in steps of 8192",
        ),
        (f"{VPC}, container: {{stop_timeout: 300}}", "actors.a.container.stop_timeout: Input should be less than"),
        (f"{VPC}, container: {{gpu: 9}}", "actors.a.container.gpu: Input should be less than or equal to 8"),
        (f"{VPC}, container: {{gpu: 1}}", "architecture: a GPU task runs on ECS's GPU-optimized AMI, which is x86_64"),
        (f"{VPC}, container: {{instance_type: g5.xlarge}}", "instance_type: for GPU tasks on EC2 (gpu: 1 or more)"),
        (f"{VPC}, container: {{min: 5, max: 2}}", "min: 5 tasks is above max 2"),
        (
            f"{VPC}, container: {{storage: 300}}",
            "actors.a.container.storage: Input should be less than or equal to 200",
        ),
        (
            f"{VPC}, architecture: x86_64, container: {{gpu: 1, public_ip: true}}",
            "public_ip: a task on EC2 (gpu) gets no public IP",
        ),
        (f"{VPC}, container: {{colour: red}}", "actors.a.container.colour: not a field"),
        (f"{VPC}, timeout: 13h", "actors.a.timeout: Input should be less than or equal to 43200"),
        (
            f"{VPC}, timeout: 12h",
            "actors.a: timeout: a batch of 1 may take 43200 s (timeout times batch_size, and 10 s), which with "
            "container.visibility 120 s passes SQS's 43200 s",
        ),
        (
            f"{VPC}, timeout: 2h, batch_size: 6",
            "actors.a: timeout: a batch of 6 may take 43200 s (timeout times batch_size, and 10 s), which with "
            "container.visibility 120 s passes SQS's 43200 s: a message's visibility cannot be extended past 12 hours",
        ),
        (f"{VPC}, memory: 4096", "memory: for Lambda actors; a container actor runs its image in ECS tasks sized by"),
        (f"{VPC}, provisioned_concurrency: 2", "provisioned_concurrency: for Lambda actors"),
        (f"{VPC}, package: zip", "package: for Lambda actors"),
        (f"{VPC}, batch_size: 20, batching_window: 5", "batch_size: a container actor receives at most 10 messages"),
        ("container: {cpu: 1}", "vpc: a container actor's tasks run in subnets of yours"),
        (f"{VPC}, timeout: 500ms", "timeout: 0.5 s; a container hop's limit is at least 1 s"),
    ],
)
def test_what_ecs_would_refuse_is_named_by_its_field(tmp_path: Path, actor: str, fragment: str) -> None:
    with pytest.raises(MeshConfigError) as caught:
        load_mesh(_load(tmp_path, actor))
    assert fragment in str(caught.value)


def test_every_fargate_size_aws_lists_is_accepted_and_no_other() -> None:
    """AWS's table of Fargate task sizes, row by row (vCPU: the memory it allows, MiB)."""
    table = {
        0.25: [512, 1024, 2048],
        0.5: [1024, 2048, 3072, 4096],
        1: list(range(2048, 8193, 1024)),
        2: list(range(4096, 16_385, 1024)),
        4: list(range(8192, 30_721, 1024)),
        8: list(range(16_384, 61_441, 4096)),
        16: list(range(32_768, 122_881, 8192)),
    }
    for cpu, sizes in table.items():
        for memory in range(512, 122_881, 512):
            settings = {"cpu": cpu, "memory": memory}
            if memory in sizes:
                assert ContainerConfig.model_validate(settings).memory == memory
            else:
                with pytest.raises(ValidationError, match=f"memory: {memory} MiB does not go with cpu {cpu:g}"):
                    ContainerConfig.model_validate(settings)


def test_a_container_batch_gets_the_time_a_lambda_batch_would(tmp_path: Path) -> None:
    """Its clock is `timeout` for each message it receives, and 10 s, as a Lambda actor's function
    timeout: a batch of 5 one-minute hops is not cut short after the first."""
    one = load_mesh(_load(tmp_path, f"{VPC}, timeout: 60")).config.actors["a"]
    five = load_mesh(_load(tmp_path, f"{VPC}, timeout: 60, batch_size: 5")).config.actors["a"]
    clock = {name: consumer_environment(actor, "url")[HOP_TIME_LIMIT.name] for name, actor in (("1", one), ("5", five))}
    assert clock == {"1": "70", "5": "310"}, "the consumer's default batch is 1"
    lambda_mesh = tmp_path / "lambda.yaml"
    lambda_mesh.write_text("namespace: boxes\nactors:\n  a: {handler: mod.fn, timeout: 60, batch_size: 5}\n")
    assert load_mesh(lambda_mesh).config.actors["a"].lambda_timeout == 310


def test_container_settings_need_the_container_runtime(tmp_path: Path) -> None:
    path = tmp_path / "mesh.yaml"
    path.write_text("namespace: boxes\nactors:\n  a: {handler: mod.fn, container: {cpu: 2, memory: 4096}}\n")
    with pytest.raises(MeshConfigError, match="container: settings for a container actor; set runtime: container"):
        load_mesh(path)


def test_a_gpu_actor_is_told_what_cannot_be_checked_offline(tmp_path: Path) -> None:
    gpu = f"{VPC}, architecture: x86_64, container: {{gpu: 4, cpu: 16, memory: 60000, max: 3}}"
    mesh = load_mesh(_load(tmp_path, gpu))
    assert mesh_problems(mesh) == []
    gpu_warning = [w for w in mesh_warnings(mesh) if w.startswith("actors.a.container.instance_type: ")]
    assert gpu_warning == [
        "actors.a.container.instance_type: whether g5.xlarge is offered in the stack's region and has 4 GPU(s) for "
        "a task cannot be checked offline (aws ec2 describe-instance-types); one with fewer never places a task "
        "(the service's events say so), and the account's quota 'Running On-Demand G and VT instances' (vCPUs, "
        "often 0 in a new account) must allow 3 of them"
    ]
    (vpc,) = [w for w in mesh_warnings(mesh) if w.startswith("actors.a.vpc: ")]
    assert vpc.startswith("actors.a.vpc: the task reaches AWS only through its subnets' routes")
    assert "ecs, ecs-agent and ecs-telemetry (the ECS agent of its GPU instances)" in vpc


def test_a_container_actor_environment_is_not_held_to_lambdas_4_kb(tmp_path: Path) -> None:
    variables = ", ".join(f"V{index}: {'x' * 200}" for index in range(30))
    mesh = load_mesh(_load(tmp_path, f"{VPC}, environment: {{{variables}}}"))
    assert mesh_problems(mesh) == [], "a task definition holds 64 KiB of variables"


def test_files_must_fit_a_tasks_storage(tmp_path: Path) -> None:
    with (tmp_path / "model.bin").open("wb") as model:
        model.truncate(25 * 2**30)  # sparse: 25 GiB on paper
    with pytest.raises(MeshConfigError) as caught:
        load_mesh(_load(tmp_path, f"{VPC}, files: {{MODEL: model.bin}}"))
    assert str(caught.value).endswith(
        "actors.a.container.storage: its files need about 26 GiB at the start (a folder counts twice), more "
        "than the task's 20 GiB; raise container.storage (up to 200) or ship them in the image's code folder"
    )
    roomy = load_mesh(_load(tmp_path, f"{VPC}, files: {{MODEL: model.bin}}, container: {{storage: 40}}"))
    assert mesh_problems(roomy) == []

"""What `asya check` warns about in a mesh file that deploys but that an account shows at its first
scale-out (`asya_cdk.cautions`): a VPC actor's endpoints, a start too slow for Lambda's init, a join
too wide for its memory; a mesh without them is told nothing."""

from __future__ import annotations

from pathlib import Path

from asya_cdk.cautions import mesh_warnings
from asya_cdk.loading import load_mesh

VPC = "vpc: {subnets: [subnet-0a1b2c3d], security_groups: [sg-0a1b2c3d]}"


def warnings_for(tmp_path: Path, actors: str, more: str = "") -> list[str]:
    (tmp_path / "code").mkdir(exist_ok=True)
    (tmp_path / "code" / "mod.py").write_text("def fn(payload):\n    return payload\n")
    (tmp_path / "mesh.yaml").write_text("namespace: warn\nactors:\n" + actors + more)
    return mesh_warnings(load_mesh(tmp_path / "mesh.yaml"))


def test_a_plain_mesh_is_told_nothing(tmp_path: Path) -> None:
    assert warnings_for(tmp_path, "  a: {handler: mod.fn, code: code}\n") == []


def vpc_warning(tmp_path: Path, actor: str, more: str = "") -> str:
    (warning,) = [w for w in warnings_for(tmp_path, actor, more) if w.startswith("actors.a.vpc: ")]
    return warning


def test_a_vpc_actor_is_told_every_endpoint_it_needs(tmp_path: Path) -> None:
    plain = vpc_warning(tmp_path, f"  a: {{handler: mod.fn, code: code, {VPC}}}\n")
    assert plain.startswith("actors.a.vpc: the function reaches AWS only through its subnets' routes: a NAT gateway")
    assert "gateway endpoints s3 (claim checks, files) and dynamodb" in plain
    assert "interface endpoints sqs, secretsmanager (the mesh's seal, and secrets); kms only if" in plain
    assert "outbound HTTPS (443)" in plain
    for image_or_agent in ("ssm", "ecr", "logs", "ecs", "xray"):
        assert f" {image_or_agent}" not in plain, "Lambda pulls its image and sends its logs itself"
    secrets = "secrets: {TOKEN: {parameter: /warn/token}}"
    with_parameters = vpc_warning(tmp_path, f"  a: {{handler: mod.fn, code: code, {VPC}, {secrets}}}\n")
    assert "ssm (secrets read from Parameter Store)" in with_parameters


def test_a_vpc_actor_is_told_fly_events_need_a_route_to_the_internet(tmp_path: Path) -> None:
    actor = f"  a: {{handler: mod.fn, code: code, {VPC}}}\n"
    channel = vpc_warning(tmp_path, actor)
    assert channel.endswith(
        "; its FLY events go to the mesh's AppSync Event API, which is public: no VPC endpoint reaches it, only a "
        "NAT gateway route; without one they are lost (StatusErrors counts them), or set gateway.fly: log"
    )
    assert "FLY" not in vpc_warning(tmp_path, actor, "gateway: {fly: log}\n"), "FLY through the live log"


def test_a_container_actor_is_told_what_its_image_logs_agent_and_traces_need(tmp_path: Path) -> None:
    fargate = vpc_warning(tmp_path, f"  a: {{handler: mod.fn, code: code, runtime: container, {VPC}}}\n")
    assert fargate.startswith(
        "actors.a.vpc: the task reaches AWS only through its subnets' routes: a NAT gateway "
        "route (or, with public_ip, an internet gateway) for all of them"
    )
    assert "gateway endpoints s3 (claim checks, files, its image's layers) and dynamodb" in fargate
    assert "ecr.api and ecr.dkr (its image), logs (its log lines)" in fargate
    assert "ecs-agent" not in fargate, "Fargate tasks need no ECS endpoints"
    assert "xray" not in fargate
    gpu = "runtime: container, architecture: x86_64, container: {gpu: 1}"
    traced = vpc_warning(tmp_path, f"  a: {{handler: mod.fn, code: code, {gpu}, {VPC}}}\n", "tracing: true\n")
    assert (
        "logs (its log lines), ecs, ecs-agent and ecs-telemetry (the ECS agent of its GPU instances), "
        "xray (its traces); kms only if" in traced
    )
    assert "public_ip" not in traced, "a task on EC2 gets no public IP"
    lambda_traced = vpc_warning(tmp_path, f"  a: {{handler: mod.fn, code: code, {VPC}}}\n", "tracing: true\n")
    assert "xray" not in lambda_traced, "Lambda's own X-Ray daemon sends a function's segments"


def test_files_too_large_for_the_init_are_named_with_the_way_out(tmp_path: Path) -> None:
    with (tmp_path / "model.bin").open("wb") as model:
        model.truncate(900 * 2**20)  # 9 s at 100 MB/s: past 8 s of the 10 s init
    (warning,) = warnings_for(tmp_path, "  a: {handler: mod.fn, code: code, files: {MODEL: model.bin}}\n")
    assert warning.startswith("actors.a.files: about 900 MB to fetch and unpack at every execution environment's")
    assert "provisioned_concurrency" in warning
    assert "package: image" in warning
    provisioned = "  a: {handler: mod.fn, code: code, files: {MODEL: model.bin}, provisioned_concurrency: 1}\n"
    assert warnings_for(tmp_path, provisioned) == [], "a provisioned environment's init may take 130 s"


def test_a_join_wider_than_its_memory_names_the_fields(tmp_path: Path) -> None:
    join = "  j: {handler: mod.fn, code: code, join: {branches_of: a, max_width: 2000}, memory: 1024}\n"
    (warning,) = warnings_for(tmp_path, "  a: {handler: mod.fn, code: code}\n" + join)
    assert warning.startswith("actors.j.join.max_width: the completing arrival of a fan of 2,000 branches of up to")
    assert "(payloads.claim_check_bytes)" in warning
    assert "more than its memory (1,024 MB)" in warning
    assert "about 998 fit" in warning
    small = "payloads: {claim_check_bytes: 65536}\n"
    assert warnings_for(tmp_path, "  a: {handler: mod.fn, code: code}\n" + join, small) == []

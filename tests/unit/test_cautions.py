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


def test_a_vpc_actor_is_told_every_endpoint_it_needs(tmp_path: Path) -> None:
    (plain,) = warnings_for(tmp_path, f"  a: {{handler: mod.fn, code: code, {VPC}}}\n")
    assert plain.startswith("actors.a.vpc: ")
    for needed in ("gateway endpoints for S3 and DynamoDB", "SQS", "Secrets Manager", "outbound HTTPS (443)"):
        assert needed in plain
    assert "SSM" not in plain, "no parameter among its secrets"
    secrets = "secrets: {TOKEN: {parameter: /warn/token}}"
    (with_parameters,) = warnings_for(tmp_path, f"  a: {{handler: mod.fn, code: code, {VPC}, {secrets}}}\n")
    assert "SSM (secrets read from Parameter Store)" in with_parameters


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

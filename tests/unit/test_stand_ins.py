"""`asya demo` ends by saying what stood in for AWS, actor by actor, from the mesh file's facts: an
example's real needs (an image, a secret, a bucket of yours, a Spark job) are not taken as tested."""

from __future__ import annotations

from pathlib import Path

from asya_cdk.loading import load_mesh
from asya_local.stand_ins import HEADING, stand_in_lines

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PROJECT = EXAMPLES.parent


def test_the_tickets_demo_names_its_bucket_its_secret_and_its_image_actor_as_stood_in() -> None:
    lines = stand_in_lines(load_mesh(EXAMPLES / "tickets" / "mesh.yaml"), PROJECT)
    assert lines == [
        HEADING,
        "  route: bucket asya-tickets-reference made here from examples/tickets/reference (local.buckets), not yours",
        "  notify: WEBHOOK_KEY from examples/tickets/demo-secrets.yaml (tickets/webhook-signing-key), "
        "not Secrets Manager",
        "  report: `package: image` run as a plain process with its libraries (no image built)",
    ]


def test_a_spark_actor_is_said_to_run_in_local_mode_and_a_mesh_with_nothing_stood_in_says_nothing() -> None:
    lines = stand_in_lines(load_mesh(EXAMPLES / "catalogue" / "mesh.yaml"), PROJECT)
    assert "  clean: a Spark job run by Spark in local mode on this machine, not EMR Serverless" in lines
    assert stand_in_lines(load_mesh(EXAMPLES / "reviews" / "mesh.yaml"), PROJECT) == []


def test_a_parameter_from_the_default_secrets_file_and_a_bucket_named_only_in_a_grant(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "mesh.yaml").write_text(
        """\
namespace: n
actors:
  a:
    handler: h.f
    secrets: {TOKEN: {parameter: /n/token}}
    permissions:
      - {actions: ["s3:GetObject"], resources: ["arn:aws:s3:::my-data/*"]}
flows:
  f: {route: [a]}
local:
  buckets: {my-data: data, other: data}
"""
    )
    (tmp_path / "h.py").write_text("def f(p):\n    return p\n")
    lines = stand_in_lines(load_mesh(tmp_path / "mesh.yaml"), tmp_path)
    assert lines == [
        HEADING,
        "  a: TOKEN from .asya/secrets.yaml (/n/token), not SSM Parameter Store; "
        "bucket my-data made here from data (local.buckets), not yours",
    ]

"""`asya check` as a user runs it: no local stack, no AWS credentials; exit 0 with a plan for a good
mesh, non-zero with the problem for a bad one."""

from __future__ import annotations

from pathlib import Path

import pytest

from asya_cdk.loading import load_mesh
from asya_local.check import plan
from asya_local.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")


@pytest.mark.parametrize(
    ("example", "function", "actions"),
    [
        ("catalogue", "asya-catalogue-score", "emr-serverless:StartJobRun"),
        ("reviews", "asya-reviews-x-sink", "s3:PutObject"),
    ],
)
def test_a_clean_example_exits_0_with_its_plan(
    capsys: pytest.CaptureFixture[str], example: str, function: str, actions: str
) -> None:
    assert main(["check", "--config", str(ROOT / "examples" / example / "mesh.yaml")]) == 0
    out = capsys.readouterr().out
    assert f"mesh '{example}' passes every check" in out
    assert "AWS::Lambda::Function" in out
    assert "AWS::SQS::Queue" in out
    [row] = [line for line in out.splitlines() if f"│ {function} " in line]
    assert "/ 4,096" in row
    assert actions in out


def test_a_bad_mesh_exits_non_zero_naming_each_field(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    mesh = tmp_path / "mesh.yaml"
    mesh.write_text("namespace: shop\nactors:\n  a: {handler: m.f, batching_window: 500ms, reserved_concurrency: 1}\n")
    assert main(["check", "--config", str(mesh)]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert f"{mesh}: actors.a.batching_window: 0.5 s is not a whole number of seconds" in out
    assert f"{mesh}: actors.a.reserved_concurrency: 1 is below 2" in out
    assert "Traceback" not in out


def test_the_plan_of_a_split_mesh_covers_its_nested_stacks() -> None:
    """A mesh too large for one stack is planned as the stacks it deploys as, each counted."""
    mesh = load_mesh(ROOT / "examples" / "reviews" / "mesh.yaml")
    whole, split = plan(mesh), plan(mesh, stack_budget=70)
    assert len(whole.stacks) == 1
    assert len(split.stacks) > 1
    assert any("nested stack" in line for line in split.stacks)
    assert set(split.actions) == set(whole.actions)  # every function, wherever its stack
    assert split.resources["AWS::Lambda::Function"] == whole.resources["AWS::Lambda::Function"]
    assert split.resources["AWS::CloudFormation::Stack"] == len(split.stacks) - 1


def test_the_plan_of_container_actors_counts_what_runs_their_tasks_and_their_grants(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """What `cdk deploy` creates, services and scaling included (the local stack leaves them out), and a
    container actor's task role's actions beside the functions'."""
    mesh_file = ROOT / "tests" / "cdk" / "meshes" / "containers.yaml"
    planned = plan(load_mesh(mesh_file))
    assert planned.resources["AWS::ECS::Service"] == 2
    assert planned.resources["AWS::ApplicationAutoScaling::ScalingPolicy"] == 4
    assert planned.resources["AWS::AutoScaling::AutoScalingGroup"] == 1
    assert planned.tasks == {"asya-boxed-embed", "asya-boxed-transcribe"}
    assert {"sqs:ReceiveMessage", "sqs:ChangeMessageVisibility", "dynamodb:PutItem"} <= set(
        planned.actions["asya-boxed-embed"]
    )
    assert main(["check", "--config", str(mesh_file)]) == 0
    [row] = [line for line in capsys.readouterr().out.splitlines() if "│ asya-boxed-embed " in line]
    assert "a task's, no 4 KB limit" in row

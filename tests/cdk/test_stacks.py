"""Large meshes: split into nested stacks that each stay under CloudFormation's limits, with cdk-nag
and cfn-lint clean; small meshes (both examples) stay one stack; a mesh too large even split is
refused at load naming the file and the field."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from cdk_nag import AwsSolutionsChecks

from asya_cdk.config import MeshConfig
from asya_cdk.loaded_mesh import LoadedMesh
from asya_cdk.loading import MeshConfigError, load_mesh
from asya_cdk.plan import RESOURCE_LIMIT, STACK_BUDGET, TEMPLATE_LIMIT_BYTES, StackPlan, plan_stacks
from asya_cdk.stack import MeshStack
from tests.support.templates import cfn_lint

# the split meshes' fixtures synthesize 25 Spark actors and 20 Lambda actors: minutes on a busy machine
pytestmark = pytest.mark.timeout(600)

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = ROOT / "examples" / "catalogue"


def _config(lambdas: int = 0, sparks: int = 0, **settings: Any) -> MeshConfig:
    actors: dict[str, Any] = {f"l{i:03}": {"handler": "actors.ingest", **settings} for i in range(lambdas)}
    actors |= {f"s{i:03}": {"handler": "actors.clean", "runtime": "spark", **settings} for i in range(sparks)}
    return MeshConfig.model_validate({"namespace": "big", "actors": actors})


@dataclass(frozen=True)
class Split:
    plan: StackPlan
    templates: dict[Path, dict[str, Any]]  # main template first


def _synthesize(config: MeshConfig, outdir: Path) -> Split:
    """As the CDK app does (cdk-nag included, which raises on any unacknowledged finding), bundling skipped."""
    app = cdk.App(outdir=str(outdir), context={"aws:cdk:bundling-stacks": []})
    stack = MeshStack(app, "asya-big", mesh=LoadedMesh(config=config, base=CATALOGUE))
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()
    files = [outdir / "asya-big.template.json", *sorted(outdir.glob("*.nested.template.json"))]
    return Split(stack.mesh.plan, {file: json.loads(file.read_text()) for file in files})


@pytest.fixture(scope="module")
def sparks(tmp_path_factory: pytest.TempPathFactory) -> Split:
    return _synthesize(_config(sparks=25), tmp_path_factory.mktemp("cdk.out"))


@pytest.fixture(scope="module")
def lambdas(tmp_path_factory: pytest.TempPathFactory) -> Split:
    return _synthesize(_config(lambdas=30), tmp_path_factory.mktemp("cdk.out"))


def _kinds(template: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [r for r in template["Resources"].values() if r["Type"] == kind]


def test_25_spark_actors_are_split_into_nested_stacks_under_the_limits(sparks: Split) -> None:
    main, *nested = sparks.templates.items()
    assert len(nested) == 2
    assert len(_kinds(main[1], "AWS::CloudFormation::Stack")) == 2
    assert not _kinds(main[1], "AWS::EMRServerless::Application")
    assert sum(len(_kinds(t, "AWS::EMRServerless::Application")) for _, t in nested) == 25
    for file, template in sparks.templates.items():
        assert len(template["Resources"]) <= STACK_BUDGET < RESOURCE_LIMIT
        assert file.stat().st_size < TEMPLATE_LIMIT_BYTES
        assert len(template.get("Parameters", {})) < 200
        assert len(template.get("Outputs", {})) < 200


def test_nested_actors_reference_the_main_stack_never_the_other_way(sparks: Split) -> None:
    (_, main), *nested = sparks.templates.items()
    for resource in _kinds(main, "AWS::CloudFormation::Stack"):
        assert set(resource["Properties"]["Parameters"]) <= {p for _, t in nested for p in t["Parameters"]}
    assert "Outputs." not in json.dumps(main)  # the dashboard and alarms see nested actors by name
    dashboard = json.dumps(_kinds(main, "AWS::CloudWatch::Dashboard")[0])
    assert '\\"QueueName\\",\\"asya-big-s024\\"' in dashboard
    assert ":function:asya-big-x-collect-s024" in dashboard  # the name, from an ARN made of it
    queues = [q for _, t in nested for q in _kinds(t, "AWS::SQS::Queue")]
    assert len(queues) == 25
    # every actor's queue still redrives into x-sump, in the main stack
    assert all(
        q["Properties"]["RedrivePolicy"]["deadLetterTargetArn"]["Ref"].startswith(
            "referencetoasyabigMeshCrewxsumpQueue"
        )
        for q in queues
    )


def test_the_estimates_cover_what_is_synthesized(sparks: Split, lambdas: Split) -> None:
    for split in (sparks, lambdas):
        shares = [split.plan.main, *split.plan.nested]
        assert len(shares) == len(split.templates)
        for share, (file, template) in zip(shares, split.templates.items(), strict=True):
            assert len(template["Resources"]) <= share.resources <= len(template["Resources"]) + 3
            assert file.stat().st_size <= share.template_bytes <= file.stat().st_size * 1.3


def test_the_estimate_covers_a_one_actor_mesh(tmp_path: Path) -> None:
    """The mesh's own share (`MESH_BYTES`) measured alone: a big mesh's per-actor margins hide it."""
    split = _synthesize(_config(lambdas=1), tmp_path)
    ((file, _template),) = split.templates.items()
    assert file.stat().st_size <= split.plan.main.template_bytes <= file.stat().st_size * 1.3


def test_30_lambda_actors_still_fit_one_stack(lambdas: Split) -> None:
    ((file, template),) = lambdas.templates.items()
    assert not lambdas.plan.split
    assert not _kinds(template, "AWS::CloudFormation::Stack")
    assert len(_kinds(template, "AWS::Lambda::Function")) == 30 + 7
    assert len(template["Resources"]) <= STACK_BUDGET
    assert file.stat().st_size < TEMPLATE_LIMIT_BYTES


@pytest.mark.parametrize("variant", ["sparks", "lambdas"])
def test_cfn_lint_passes_on_every_stack(variant: str, request: pytest.FixtureRequest) -> None:
    split: Split = request.getfixturevalue(variant)
    for file in split.templates:
        result = cfn_lint(file)
        assert result.returncode == 0, f"{file.name}: {result.stdout}{result.stderr}"


@pytest.mark.parametrize("example", ["catalogue", "reviews"])
def test_the_examples_are_one_stack(example: str) -> None:
    plan = load_mesh(ROOT / "examples" / example / "mesh.yaml")
    assert not plan_stacks(plan.config).split


def test_actors_fill_nested_stacks_in_file_order() -> None:
    plan = plan_stacks(_config(lambdas=120))
    assert [len(share.actors) for share in plan.nested] == [57, 57, 6]
    assert plan.nested[0].actors[:2] == ("l000", "l001")
    assert plan.nested[2].actors[-1] == "l119"
    assert all(share.resources <= STACK_BUDGET for share in plan.nested)
    assert plan.main.actors == ()
    assert plan.group_of("l057") == 1
    assert plan.describe()[1].startswith("nested stack Actors1: 57 actor(s), ~400 of 500 resources")


def test_a_smaller_budget_splits_a_small_mesh() -> None:
    plan = plan_stacks(_config(lambdas=3), budget=15)
    assert [share.actors for share in plan.nested] == [("l000", "l001"), ("l002",)]
    with pytest.raises(ValueError, match="between 1 and 400"):
        plan_stacks(_config(lambdas=3), budget=450)


def test_long_environments_count_against_a_nested_template() -> None:
    environment = {f"SETTING_{n}": "x" * 250 for n in range(20)}
    plan = plan_stacks(_config(sparks=40, environment=environment))
    assert len(plan_stacks(_config(sparks=40)).nested[0].actors) == 19  # resources decide (20 a Spark actor)
    assert len(plan.nested[0].actors) < 19  # the variables' three copies per actor decide
    assert all(share.template_bytes <= 800_000 for share in plan.nested)


def test_a_mesh_too_large_even_split_is_refused_naming_the_file_and_field(tmp_path: Path) -> None:
    mesh = tmp_path / "mesh.yaml"
    actors = "".join(f"  a{i}:\n    handler: actors.ingest\n    code: {CATALOGUE}\n" for i in range(250))
    mesh.write_text(f"namespace: huge\nactors:\n{actors}")
    with pytest.raises(MeshConfigError) as refused:
        load_mesh(mesh)
    message = str(refused.value)
    assert message.startswith(f"{mesh}: actors: 250 actors need")
    assert "several meshes" in message

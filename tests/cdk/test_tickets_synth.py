"""The tickets example synthesized for AWS as `cdk synth` does it (bundling on, cdk-nag on): each
actor's libraries built for arm64 and Python 3.14 into its code, the report's image folder prepared,
sizes printed against Lambda's limit, and no cdk-nag finding left without a reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.templates import ROOT, cfn_lint, run_cdk_app

MESH = ROOT / "examples" / "tickets" / "mesh.yaml"

pytestmark = pytest.mark.build


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    outdir = tmp_path_factory.mktemp("cdk.out")
    finished = run_cdk_app(MESH, outdir)
    assert finished.returncode == 0, finished.stderr[-4000:]
    return outdir, finished.stderr


def test_synth_prints_each_actors_size_against_lambdas_limit(synthesized: tuple[Path, str]) -> None:
    _, said = synthesized
    classify = next(line for line in said.splitlines() if line.startswith("asya: actors.classify: "))
    assert " of 262.1 MB (code and layers: code " in classify
    assert "libraries" in classify
    assert any(
        line.startswith("asya: actors.report: ") and "of 10,737.4 MB (image:" in line for line in said.splitlines()
    )


def test_the_classifier_ships_its_libraries_and_the_report_an_image_folder(synthesized: tuple[Path, str]) -> None:
    outdir, _ = synthesized
    template = json.loads((outdir / "asya-tickets.template.json").read_text())
    assets = json.loads((outdir / "asya-tickets.assets.json").read_text())
    functions = {
        r["Properties"]["FunctionName"]: r["Properties"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::Lambda::Function"
    }
    classify = functions["asya-tickets-classify"]
    (code,) = [a for a in assets["files"].values() if classify["Code"]["S3Key"] in json.dumps(a["destinations"])]
    folder = outdir / code["source"]["path"]
    shipped = {p.name for p in folder.iterdir()}
    assert {"sklearn", "joblib", "scipy", "numpy", "triage.py"} <= shipped
    assert not shipped & {"pydantic", "aws_lambda_powertools", "boto3", "botocore"}, "the layer's and the runtime's"
    native = [p.name for p in (folder / "numpy" / "_core").glob("*.so")]
    assert native, "numpy's compiled modules"
    assert all("cpython-314-aarch64-linux-gnu" in name for name in native), "built for arm64 and Python 3.14"
    report = functions["asya-tickets-report"]
    assert report["PackageType"] == "Image"
    (image,) = assets["dockerImages"].values()
    built_from = outdir / image["source"]["directory"]
    assert "FROM public.ecr.aws/lambda/python:3.14" in (built_from / "Dockerfile").read_text()
    assert {"asya", "pandas", "aws_lambda_powertools", "report.py"} <= {p.name for p in (built_from / "task").iterdir()}
    assert image["source"]["platform"] == "linux/arm64"


def test_the_template_passes_cfn_lint(synthesized: tuple[Path, str]) -> None:
    outdir, _ = synthesized
    linted = cfn_lint(outdir / "asya-tickets.template.json")
    assert linted.returncode == 0, linted.stdout

"""What a local stack writes on this machine goes with it: each `asya up` or `asya demo` synthesizes the
mesh's app (some megabytes of templates and code), and a stopped stack leaves none of it behind."""

from __future__ import annotations

from pathlib import Path

from asya_cdk.loading import load_mesh
from asya_local.stack import LocalStack

REVIEWS = Path(__file__).resolve().parents[2] / "examples" / "reviews" / "mesh.yaml"


def test_the_synthesized_app_goes_with_the_stack() -> None:
    stack = LocalStack(load_mesh(REVIEWS))
    synthesized = stack.synthesize()
    assert (synthesized.outdir / f"{synthesized.stack_name}.template.json").exists()
    stack.stop()
    assert not synthesized.outdir.exists()

"""The CDK app: `cdk synth -c mesh=path/to/mesh.yaml` (default: the example mesh).

A bad mesh file stops synthesis with a message naming the file and the field.
"""

from __future__ import annotations

import sys
from pathlib import Path

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

sys.path.insert(0, str(Path(__file__).resolve().parent))

from asya_cdk.config import MeshConfigError, load_mesh
from asya_cdk.stack import MeshStack, stack_name

DEFAULT_MESH = Path(__file__).resolve().parents[1] / "examples" / "catalogue" / "mesh.yaml"


def main() -> None:
    app = cdk.App()
    try:
        mesh = load_mesh(app.node.try_get_context("mesh") or DEFAULT_MESH)
    except MeshConfigError as exc:
        sys.exit(f"asya: {exc}")
    MeshStack(app, stack_name(mesh), mesh=mesh)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()


if __name__ == "__main__":
    main()

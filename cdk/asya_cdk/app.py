"""The CDK app: `cdk synth --app "python -m asya_cdk.app" -c mesh=path/to/mesh.yaml` (default: `mesh.yaml`
in the folder it runs in), as `asya synth` and `asya deploy` run it from a user's project folder.

A bad mesh file stops synthesis with a message naming the file and the field. When the stack is
synthesized for AWS (bundling on: `cdk synth`, `cdk deploy`), each actor's libraries are installed for
its platform and every Lambda actor's size is printed against Lambda's limit; one over it stops
synthesis, naming its largest packages.
"""

from __future__ import annotations

import sys
from pathlib import Path

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from asya_cdk.libraries import LibrariesError
from asya_cdk.loading import MeshConfigError, load_mesh
from asya_cdk.packaging import docker_problem, function_sizes
from asya_cdk.stack import MeshStack, stack_name

DEFAULT_MESH = Path("mesh.yaml")


def main() -> None:
    app = cdk.App()
    try:
        mesh = load_mesh(app.node.try_get_context("mesh") or DEFAULT_MESH)
        if app.node.try_get_context("aws:cdk:bundling-stacks") != []:
            sizes = function_sizes(mesh)
            for size in sizes:
                print(f"asya: actors.{size.actor}: {size.describe()}", file=sys.stderr)
            problems = [problem for size in sizes if (problem := size.problem())]
            if problems:
                raise MeshConfigError("\n".join(problems))
            docker = docker_problem(mesh)
            if docker:
                print(f"asya: warning: {docker}", file=sys.stderr)
    except (MeshConfigError, LibrariesError) as exc:
        sys.exit(f"asya: {exc}")
    MeshStack(app, stack_name(mesh), mesh=mesh)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()


if __name__ == "__main__":
    main()

"""`asya deploy [--config FILE] [-- CDK ARGUMENTS]`: `cdk deploy` of a mesh file, after what would make
it fail half-way.

First `asya check` (AWS's limits, each actor's size with its libraries); then, when an actor is
`package: image`, whether a Docker engine answers, since the deploy builds its image with Docker
(`cdk synth` and `asya check` do not need one). Then the CDK CLI's own `cdk deploy`, with your AWS
credentials, from the project's folder (where `cdk.json` is).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from asya_cdk.loading import load_mesh
from asya_cdk.packaging import docker_problem
from asya_local.arguments import command
from asya_local.check import check

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def add_parser(commands: Any, default_config: Path) -> None:
    deploy = command(
        commands,
        "deploy",
        "asya check, Docker checked for image actors, then cdk deploy (your AWS credentials)",
        "asya deploy --config examples/reviews/mesh.yaml -- --require-approval never",
    )
    deploy.add_argument("--config", type=Path, default=default_config, help="mesh file")
    deploy.add_argument("cdk_arguments", nargs=argparse.REMAINDER, help="passed on to cdk deploy, after --")


def run(args: argparse.Namespace, console: Console) -> int:
    checked = check(args.config, console)
    if checked != 0:
        return checked
    docker = docker_problem(load_mesh(args.config))
    if docker is not None:
        console.print(f"[red]asya: {docker}; start Docker, or deploy from a machine that has it[/red]")
        return 2
    command = ["npx", "cdk", "deploy", "-c", f"mesh={args.config.resolve()}"]
    command += [argument for argument in args.cdk_arguments if argument != "--"]
    console.print(" ".join(command), highlight=False)
    # the CDK app runs with this interpreter's environment (cdk.json names .venv/bin/python)
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return subprocess.call(command, cwd=PROJECT_ROOT, env={**os.environ, "PATH": path})

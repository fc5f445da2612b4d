"""`asya synth`, `asya diff`, `asya deploy`, `asya destroy`: the CDK's own commands on a mesh file, from
the user's project folder.

Each runs the pinned CDK CLI (`asya_local.cdk_toolkit`) on the CDK app shipped in the package, with the
mesh file (`--config`, default `mesh.yaml` here), in the current folder: `cdk.out/` is written there,
and the user's AWS credentials, profile and region are the CLI's as usual. Whatever follows `--` goes
to the CDK CLI as it is (`asya deploy -- --require-approval never`).

`asya deploy` first does what would make a deploy fail half-way: `asya check --account` (AWS's limits,
each actor's size with its libraries, and, with the caller's credentials, the account's concurrency,
namespaces and deployed package types; `--no-account` leaves the account out), then, when an actor is
`package: image`, whether a Docker engine answers, since the deploy builds its image with Docker
(`asya synth` and `asya check` need none). Every verb runs the CDK CLI with BuildKit's default
attestations off (`asya_local.cdk_toolkit.cdk_environment`), so an image is pushed as Lambda takes it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from asya_cdk.loading import load_mesh
from asya_cdk.packaging import NO_ATTESTATIONS, docker_problem
from asya_local.cdk_toolkit import cdk_arguments, cdk_cli, cdk_environment, run_cdk
from asya_local.check import check, check_against_account


def run(args: argparse.Namespace, console: Console) -> int:
    mesh = load_mesh(args.config)  # a bad mesh file is one line here, before Node.js starts
    environment = cdk_environment()
    if args.command == "deploy":
        checked = check(args.config, console) if args.no_account else check_against_account(args.config, console)
        if checked != 0:
            return checked
        docker = docker_problem(mesh, environment)
        if docker is not None:
            console.print(f"[red]asya: {docker}[/red]", highlight=False)
            return 2
    cli = cdk_cli(announce=lambda line: console.print(line, highlight=False))
    extra = [argument for argument in args.cdk_arguments if argument != "--"]
    arguments = cdk_arguments(args.command, args.config, extra)
    images = any(actor.package == "image" for actor in mesh.config.actors.values())
    shown = f"{NO_ATTESTATIONS}={environment[NO_ATTESTATIONS]} " if images else ""
    console.print(f"{shown}cdk {' '.join(arguments)}", highlight=False, soft_wrap=True)
    return run_cdk(cli, arguments, Path.cwd())

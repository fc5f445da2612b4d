"""`asya`: run a mesh on this machine and work with it.

    asya up      [--config FILE] [--port N] [--faults FILE|SPEC]   start the local stack; Ctrl-C stops it
    asya send    PAYLOAD (--flow NAME | --route a,b) [--count N] [--each]   create tasks; prints their ids
    asya tasks   [--status S|all] [--flow F] [--actor A] [--since T] [--until T] [--cursor C | --all]
                                                 tasks newest first, every status by default, page by page
    asya status  ID                              a task as the gateway reports it
    asya watch   ID                              follow a task live until it ends
    asya results ID                              what x-sink / x-sump kept for an envelope
    asya cancel  ID / asya resume ID JSON        cancel a task; give a paused one what it asked for
    asya queues  [--watch]                       queue depths
    asya demo    [--config FILE] [--inputs FILE] start, send the example inputs, watch, print, stop
    asya init    [DIR] [--namespace NS] [--cdk]   a new mesh project: mesh.yaml, actors, tests; never overwrites
    asya check   [--config FILE] [--account]     AWS's limits checked, and what `cdk deploy` would create
    asya schema  [--output FILE]                 the mesh file's JSON Schema, for editors (docs/mesh.md)
    asya synth | diff | deploy | destroy [--config FILE] [-- CDK ARGS]   the CDK's commands, from this folder
                                                 (deploy: asya check --account and Docker for image actors
                                                 first; --no-account skips the account)
    asya smoke   --stack NAME [--flow NAME]...    one task per flow through a deployed mesh (AWS or local)
    asya console [--stack NAME] [--port N]       the mesh, its queues and tasks, live, in a browser
    asya secrets set NAME [VALUE] [--config FILE]  a secret's local value (stdin if VALUE is left out)
    asya flow show FLOW [--config FILE] [--image PATH]  a flow's route, or its program in words and drawn
    asya token   [--subject S] [--scope SCOPE]... [--role R]... [--client-credentials] [--stack NAME]
                                                 a token for a mesh with gateway.auth: jwt: the local
                                                 issuer's, or a deployed Cognito pool's machine client's

`send`, `tasks`, `status`, `watch`, `results`, `cancel`, `resume`, `rerun`, `queues`, `sump` and
`console` take `--stack NAME [--token T]`: a deployed mesh, found from its stack's outputs and reached
with the caller's AWS credentials (`asya_local.discovery`), instead of the local stack.

`asya up`, `asya demo` and `asya console` are `asya_local.local_cli`; `asya up` writes
`.asya/local.json` (endpoint, namespace, bucket, gateway URL and API key, console URL, worker log, its
own process) so the other commands find it, from any folder below (`asya_local.local_state`).
Tasks are created and followed through the status gateway's API, as any
client would on AWS. Argument parsing is the standard library's argparse (`asya_local.arguments`: a
mistake is one line); HTTP is `httpx2`; tables,
live views and progress bars are `rich`. Every parser is built from light modules; a command whose
module loads the CDK (which starts Node.js), moto, Flask or the drawing imports it only when it runs
(`asya_local.mesh_parsers`), so `asya status` and `asya --help` start in half a second
(docs/performance.md, "The CLI's start").
"""

from __future__ import annotations

import argparse
import sys
from importlib.metadata import version
from pathlib import Path
from urllib.parse import urlsplit

from botocore.exceptions import EndpointConnectionError
from rich.live import Live

from asya.names import DISTRIBUTION
from asya_cdk.libraries import LibrariesError
from asya_cdk.mesh_error import MeshConfigError
from asya_local import (
    init_cli,
    mesh_parsers,
    schema_cli,
    secrets_cli,
    smoke,
    stack_option,
    sump_cli,
    task_cli,
    token_cli,
)
from asya_local.arguments import Parser
from asya_local.cdk_toolkit import ToolkitError
from asya_local.discovery import DiscoveryError
from asya_local.fixtures import LocalSecretError
from asya_local.gateway_client import GatewayError, GatewayUnreachableError, ShortIdError
from asya_local.init_cli import InitError
from asya_local.local_state import (
    LocalStateError,
    read_state,
    running_state,
)
from asya_local.node_session import node_in_own_session
from asya_local.screen import console
from asya_local.smoke import SmokeError
from asya_local.sump_cli import SumpCommandError
from asya_local.task_cli import TaskCommandError

DEFAULT_CONFIG = Path("mesh.yaml")  # a project's mesh file, in the folder a command runs in


def parser() -> Parser:
    """Every `asya` command, each with its help: what it does and an example."""
    root = Parser(prog="asya", description="Run an asya mesh on this machine, check it, deploy it, work with it.")
    root.add_argument("--version", action="version", version=f"asya {version(DISTRIBUTION)}")
    commands = root.add_subparsers(dest="command", required=True, metavar="COMMAND")
    mesh_parsers.add_local_parsers(commands, DEFAULT_CONFIG)
    task_cli.add_parsers(commands)
    mesh_parsers.add_check_parser(commands, DEFAULT_CONFIG)
    mesh_parsers.add_cdk_parsers(commands, DEFAULT_CONFIG)
    init_cli.add_parser(commands)
    schema_cli.add_parser(commands)
    mesh_parsers.add_smoke_parser(commands)
    sump_cli.add_parser(commands)
    secrets_cli.add_parser(commands, DEFAULT_CONFIG)
    mesh_parsers.add_flow_parser(commands, DEFAULT_CONFIG)
    token_cli.add_parser(commands)
    return root


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    commands_run = {
        "up": _up,
        "demo": _demo,
        "console": _console,
        **task_cli.COMMANDS,
        "check": _check,
        **dict.fromkeys(mesh_parsers.VERBS, _cdk),
        "smoke": _smoke,
        "sump": _sump,
        "secrets": _secrets,
        "flow": _flow,
        "token": _token,
        "init": _init,
        "schema": _schema,
    }
    try:
        return commands_run[args.command](args)
    except (
        MeshConfigError,
        LocalStateError,
        GatewayUnreachableError,
        SmokeError,
        DiscoveryError,
        SumpCommandError,
        TaskCommandError,
        LocalSecretError,
        LibrariesError,
        argparse.ArgumentTypeError,
        ShortIdError,
        ToolkitError,
        InitError,
    ) as exc:
        console.print(f"[red]asya: {exc}[/red]", highlight=False, soft_wrap=True)
        return 2
    except EndpointConnectionError as exc:
        console.print(
            f"[red]asya: nothing answers at {_origin(exc.kwargs.get('endpoint_url'))}: "
            "is `asya up` still running?[/red]",
            highlight=False,
            soft_wrap=True,
        )
        return 2
    except GatewayError as exc:
        console.print(f"[red]asya: the gateway refused: {exc}[/red]")
        return 1


def _origin(url: object) -> str:
    """Where a request went, without its path: the endpoint a person started."""
    parts = urlsplit(str(url))
    return f"{parts.scheme}://{parts.netloc}"


# The commands whose modules load the CDK, moto, Flask or the drawing import them here, when they run.
# Those stopped with Ctrl-C start the CDK's Node.js process out of the terminal's reach first.


def _up(args: argparse.Namespace) -> int:
    node_in_own_session()
    from asya_local import local_cli

    return local_cli.up(args)


def _demo(args: argparse.Namespace) -> int:
    node_in_own_session()
    from asya_local import local_cli

    return local_cli.demo(args)


def _console(args: argparse.Namespace) -> int:
    node_in_own_session()
    from asya_local import local_cli

    return local_cli.serve_console(args)


def _init(args: argparse.Namespace) -> int:
    return init_cli.run(args, console)


def _schema(args: argparse.Namespace) -> int:
    return schema_cli.run(args, console)


def _cdk(args: argparse.Namespace) -> int:
    from asya_local import cdk_cli

    return cdk_cli.run(args, console)


def _flow(args: argparse.Namespace) -> int:
    from asya_local import flow_cli

    return flow_cli.run(args, console)


def _token(args: argparse.Namespace) -> int:
    return token_cli.run(args, None if args.stack else running_state())


def _secrets(args: argparse.Namespace) -> int:
    return secrets_cli.run(args, read_state(), console)


def _check(args: argparse.Namespace) -> int:
    from asya_local.check import check, check_against_account

    return check_against_account(args.config, console) if args.account else check(args.config, console)


def _sump(args: argparse.Namespace) -> int:
    return sump_cli.run(args, stack_option.gateway(args), console)


def _smoke(args: argparse.Namespace) -> int:
    """Find the mesh from its stack, run a task per flow, print the table; see `asya_local.smoke`."""
    mesh = stack_option.deployed(args)
    runs = smoke.plan(mesh, args.flow)
    console.print(f"smoke test of {mesh.stack} in {mesh.where}: {len(runs)} flow(s)", highlight=False)
    with Live(smoke.report(mesh, runs), console=console, refresh_per_second=2) as live:
        smoke.run(mesh, runs, timeout=args.timeout, on_change=lambda: live.update(smoke.report(mesh, runs)))
    return smoke.exit_code(runs, args.allow_skip)


if __name__ == "__main__":
    sys.exit(main())

"""Every `asya` command: the parser of each, the function that runs it, and the refusals said in one
line (`asya: ...`, exit 2) rather than as a traceback. Loaded by `asya_local.command` once the command
line asks for more than `--version`; `asya_local.cli` describes the commands."""

from __future__ import annotations

import argparse
from http import HTTPStatus
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
    listing_cli,
    mesh_parsers,
    schema_cli,
    secrets_cli,
    smoke,
    stack_option,
    sump_cli,
    task_cli,
    token_cli,
    trace_cli,
)
from asya_local.answers import MISTAKE, NOT_DONE
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
from asya_local.running_mesh import TaskCommandError
from asya_local.screen import console, refuse
from asya_local.smoke import SmokeError
from asya_local.sump_cli import SumpCommandError

DEFAULT_CONFIG = Path("mesh.yaml")  # a project's mesh file, in the folder a command runs in


def parser() -> Parser:
    """Every `asya` command, each with its help: what it does and an example."""
    root = Parser(prog="asya", description="Run an asya mesh on this machine, check it, deploy it, work with it.")
    root.add_argument("--version", action="version", version=f"asya {version(DISTRIBUTION)}")
    commands = root.add_subparsers(dest="command", required=True, metavar="COMMAND")
    mesh_parsers.add_local_parsers(commands, DEFAULT_CONFIG)
    task_cli.add_parsers(commands)
    listing_cli.add_parsers(commands)
    mesh_parsers.add_check_parser(commands, DEFAULT_CONFIG)
    mesh_parsers.add_cdk_parsers(commands, DEFAULT_CONFIG)
    init_cli.add_parser(commands)
    schema_cli.add_parser(commands)
    mesh_parsers.add_smoke_parser(commands)
    sump_cli.add_parser(commands)
    secrets_cli.add_parser(commands, DEFAULT_CONFIG)
    mesh_parsers.add_flow_parser(commands, DEFAULT_CONFIG)
    token_cli.add_parser(commands)
    trace_cli.add_parser(commands)
    return root


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    commands_run = {
        "up": _up,
        "demo": _demo,
        "console": _console,
        **task_cli.COMMANDS,
        **listing_cli.COMMANDS,
        "check": _check,
        **dict.fromkeys(mesh_parsers.VERBS, _cdk),
        "smoke": _smoke,
        "sump": _sump,
        "secrets": _secrets,
        "flow": _flow,
        "token": _token,
        **trace_cli.COMMANDS,
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
        refuse(str(exc))
        return MISTAKE
    except EndpointConnectionError as exc:
        refuse(f"nothing answers at {_origin(exc.kwargs.get('endpoint_url'))}: is `asya up` still running?")
        return MISTAKE
    except GatewayError as exc:
        refuse(f"the gateway refused: {exc}")
        return MISTAKE if exc.status == HTTPStatus.NOT_FOUND else NOT_DONE  # 404: an id it does not know


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

    args.config = _mesh_file(args.config)
    return flow_cli.run(args, console)


def _token(args: argparse.Namespace) -> int:
    return token_cli.run(args, None if args.stack else running_state())


def _secrets(args: argparse.Namespace) -> int:
    return secrets_cli.run(args, read_state(), console)


def _check(args: argparse.Namespace) -> int:
    from asya_local.check import check, check_against_account

    args.config = _mesh_file(args.config)
    return check_against_account(args.config, console) if args.account else check(args.config, console)


def _mesh_file(given: Path | None) -> Path:
    """The mesh file a command reads: `--config`, else the running local stack's (the one `asya send`
    sends to), said as such, else `DEFAULT_CONFIG`."""
    state = read_state() if given is None else None
    if state is None:
        return given or DEFAULT_CONFIG
    config = Path(state["config"])
    shown = config.relative_to(Path.cwd()) if config.is_relative_to(Path.cwd()) else config
    console.print(f"reading {shown}, the running stack's mesh file (--config reads another)", highlight=False)
    return shown


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

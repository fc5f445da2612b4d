"""`--stack` and `--token`, as every task command takes them: which mesh a command works with (the local
stack `asya up` runs, or a deployed one found by its stack's name, `asya_local.discovery`) and the
gateway client it calls, the same client and the same output either way."""

from __future__ import annotations

import argparse

from asya import variables
from asya_local.discovery import DeployedMesh, discover, given_token
from asya_local.gateway_client import GatewayClient
from asya_local.local_state import gateway_of, read_state, running_state


def add_stack_options(parser: argparse.ArgumentParser, required: bool = False) -> None:
    """`--stack` (`required` for a command that only works with a stack, as `asya smoke`) and `--token`."""
    parser.add_argument(
        "--stack",
        required=required,
        help="a deployed mesh's stack (asya-<namespace>), reached with your AWS credentials and region"
        + ("" if required else "; default: the local stack asya up runs"),
    )
    parser.add_argument(
        "--token", help=f"a bearer token for a gateway with gateway.auth: jwt (default: {variables.TOKEN.name})"
    )


def deployed(args: argparse.Namespace) -> DeployedMesh:
    """The mesh `--stack` names, found and authenticated to."""
    return discover(args.stack, read_state(), given_token(args.token))


def gateway(args: argparse.Namespace) -> GatewayClient:
    """The gateway of the mesh the command works with."""
    if args.stack:
        return deployed(args).gateway
    return gateway_of(running_state(), given_token(args.token))

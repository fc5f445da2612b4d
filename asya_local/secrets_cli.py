"""`asya secrets set <name> [value]`: a secret's local value (`asya_local.fixtures`).

The value is read from standard input when it is not given (so it stays out of the shell's history),
written to the mesh's local secrets file (readable by its owner only), and, when a local stack of that
mesh file runs, stored in its endpoint at once, so the next execution environment reads it.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from asya_local.arguments import command, command_group
from asya_local.fixtures import LocalSecretError, named_secrets, secrets_file, store_secret, write_value


def add_parser(commands: Any, default_config: Path) -> None:
    summary = "the local values of the secrets actors read"
    actions = command_group(commands, "secrets", summary, "asya secrets set api-key")
    setting = command(
        actions,
        "set",
        "set a secret's local value (asya up reads it)",
        "asya secrets set api-key          # the value from standard input",
        "asya secrets set /shop/region eu-west-1",
    )
    setting.add_argument("name", help="the secret's or parameter's name, as an actor's `secrets:` names it")
    setting.add_argument("value", nargs="?", help="the value (default: read from standard input)")
    setting.add_argument("--config", type=Path, default=default_config, help="mesh file")


def run(args: argparse.Namespace, state: dict[str, str] | None, console: Console) -> int:
    from asya_cdk.loading import load_mesh  # the models: this command's, not every command's that builds its parser

    mesh = load_mesh(args.config)
    references = [named.reference for named in named_secrets(mesh) if named.reference.name == args.name]
    if not references:
        known = sorted({named.reference.name for named in named_secrets(mesh)})
        raise LocalSecretError(
            f"no actor of {args.config} reads a secret named {args.name!r}"
            + (f" (they read: {', '.join(known)})" if known else " (no actor has secrets:)")
        )
    value = args.value if args.value is not None else _read_value(args.name)
    file = secrets_file(mesh)
    write_value(file, args.name, value)
    console.print(f"{args.name}: written to {file}", highlight=False)
    if state is not None and Path(state.get("config", "")) == args.config.resolve():
        from asya_local.roles import local_client

        endpoint = state["endpoint"]
        store_secret(local_client("secretsmanager", endpoint), local_client("ssm", endpoint), references[0], value)
        console.print(f"{args.name}: stored in the running local stack ({endpoint})", highlight=False)
    return 0


def _read_value(name: str) -> str:
    if sys.stdin.isatty():
        return getpass.getpass(f"value of {name}: ")
    return sys.stdin.read().rstrip("\n")

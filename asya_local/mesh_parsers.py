"""The command lines of the commands that start, check, deploy, test or draw a mesh: `asya up`, `demo`,
`console`, `check`, `synth` / `diff` / `deploy` / `destroy`, `smoke` and `flow show`.

Their parsers are here, apart from what the commands run (`local_cli`, `check`, `cdk_cli`, `smoke`,
`flow_cli`), because what those import is heavy: the CDK (which starts Node.js), moto, Flask, the
drawing. `asya_local.commands` builds every parser, for `asya status` and `asya --help` too, and imports a
command's module only when that command runs.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from asya_local import smoke
from asya_local.arguments import command, command_group, positive_int
from asya_local.functions.faults import FaultSpec, FaultSpecError, load_faults
from asya_local.stack_option import add_stack_options

INPUTS_FILE = "inputs.json"  # the demo's payloads, beside the mesh file unless --inputs says otherwise
IMAGES = Path(".asya") / "flows"  # a program's drawing: beside the mesh file, where `asya up` keeps its other files
VERBS = {
    "synth": ("the stack's CloudFormation template, cdk-nag checked, into cdk.out/", "asya synth -- --quiet"),
    "diff": ("what a deploy would change in the deployed stack (your AWS credentials)", "asya diff"),
    "deploy": (
        "asya check --account, Docker checked for image actors, then cdk deploy (your AWS credentials)",
        "asya deploy -- --require-approval never",
    ),
    "destroy": ("delete the deployed stack and what it made (your AWS credentials)", "asya destroy -- --force"),
}


def add_local_parsers(commands: Any, default_config: Path) -> None:
    """`asya up`, `asya demo` and `asya console` (`asya_local.local_cli`)."""
    up = command(
        commands,
        "up",
        "start the mesh on the local stack, until Ctrl-C",
        "asya up --config examples/reviews/mesh.yaml",
        "asya up --port 0 --faults faults.yaml   # a second stack, with faults injected",
    )
    demo = command(
        commands,
        "demo",
        "start the mesh, send its example inputs, show them flowing, print what came out, stop",
        "asya demo --config examples/catalogue/mesh.yaml",
    )
    for started in (up, demo):
        started.add_argument("--config", type=Path, default=default_config, help="mesh file")
        started.add_argument(
            "--port", type=int, default=4566 if started is up else 0, help="endpoint port; 0: any free"
        )
        started.add_argument("--workers", type=positive_int, default=1, help="execution environments per function")
        started.add_argument("--gateway-port", type=int, default=0, help="the gateway's port; 0: any free")
        started.add_argument(
            "--faults", type=_fault_spec, help="fault spec (YAML/JSON file or inline) applied to the workers"
        )
    up.add_argument("--console-port", type=int, default=0, help="the console's port; 0: any free")
    demo.add_argument("--inputs", type=Path, help=f"JSON list of payloads (default: {INPUTS_FILE} beside the mesh)")
    demo.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for the mesh to drain")
    console_command = command(
        commands,
        "console",
        "the mesh, its queues and tasks, live, in a browser",
        "asya console",
        "asya console --stack asya-reviews   # a deployed mesh, with your AWS credentials",
    )
    add_stack_options(console_command)
    console_command.add_argument("--port", type=int, default=0, help="the console's port on 127.0.0.1; 0: any free")


def _fault_spec(source: str) -> FaultSpec:
    try:
        return load_faults(source)
    except FaultSpecError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_check_parser(commands: Any, default_config: Path) -> None:
    """`asya check` (`asya_local.check`)."""
    check = command(
        commands,
        "check",
        "check the mesh file against AWS's limits, every problem in one run; show what cdk deploy creates",
        "asya check --config examples/reviews/mesh.yaml --account",
    )
    check.add_argument("--config", type=Path, help=running_or(default_config))
    check.add_argument(
        "--account",
        action="store_true",
        help="also the account: its Lambda concurrency, deployed namespaces and package types (your AWS credentials)",
    )


def running_or(default_config: Path) -> str:
    """The help of a `--config` left out for the running local stack's mesh file (`asya_local.cli`)."""
    return f"mesh file (default: the running local stack's, as asya send uses; else {default_config})"


def add_cdk_parsers(commands: Any, default_config: Path) -> None:
    """`asya synth`, `diff`, `deploy` and `destroy` (`asya_local.cdk_cli`)."""
    for verb, (summary, example) in VERBS.items():
        parser = command(commands, verb, summary, example, f"asya {verb} --config meshes/prod.yaml")
        parser.add_argument("--config", type=Path, default=default_config, help="mesh file")
        if verb == "deploy":
            parser.add_argument(
                "--no-account",
                action="store_true",
                help="check the mesh file alone, not the account's concurrency, namespaces and package types",
            )
        parser.add_argument("cdk_arguments", nargs=argparse.REMAINDER, help=f"passed on to cdk {verb}, after --")


def add_smoke_parser(commands: Any) -> None:
    """`asya smoke` (`asya_local.smoke`)."""
    smoke_test = command(
        commands,
        "smoke",
        "one task per flow through a deployed mesh: pass or fail per flow; cleans up its results",
        "asya smoke --stack asya-reviews --flow triage-reviews",
    )
    add_stack_options(smoke_test, required=True)
    smoke_test.add_argument("--flow", action="append", default=[], help="only this flow (repeatable; default: all)")
    smoke_test.add_argument(
        "--timeout",
        type=float,
        default=smoke.DEFAULT_TIMEOUT_SECONDS,
        help="seconds each flow may take before it fails",
    )
    smoke_test.add_argument("--allow-skip", action="store_true", help="a flow without an example input is no failure")


def add_flow_parser(commands: Any, default_config: Path) -> None:
    """`asya flow show` (`asya_local.flow_cli`)."""
    actions = command_group(commands, "flow", "the mesh's flows, read from the mesh file", "asya flow show refining")
    show = command(
        actions,
        "show",
        "what a flow does: its route, or its program in words and drawn as an SVG image",
        "asya flow show refining --config tests/integration/flows/mesh.yaml",
        "asya flow show refining --image refining.svg",
    )
    show.add_argument("flow", help="the flow's name, as the mesh file's `flows:` names it")
    show.add_argument("--config", type=Path, help=running_or(default_config))
    show.add_argument(
        "--image", type=Path, help=f"where to write a program's drawing (default: {IMAGES}/<flow>.svg beside the mesh)"
    )

"""`asya schema [--output FILE]`: the mesh file's JSON Schema, for editors and other tools.

It is made from the model `asya check` and the CDK app validate the file with
(`asya_cdk.config.mesh_schema`), so the two never disagree on a field's name, type or range. An editor
with a YAML language server reads it from the file's first line:

    # yaml-language-server: $schema=./mesh.schema.json

What a schema cannot say (names that resolve, paths on disk, AWS's quotas) stays `asya check`'s.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rich.console import Console

from asya_local.arguments import command

SCHEMA_FILE = "mesh.schema.json"  # beside mesh.yaml, as `asya init` writes it


def add_parser(commands: Any) -> None:
    schema = command(
        commands,
        "schema",
        "print the mesh file's JSON Schema (what asya check validates), for editors and other tools",
        "asya schema > mesh.schema.json",
        f"asya schema --output {SCHEMA_FILE}",
    )
    schema.add_argument("--output", type=Path, metavar="FILE", help="write it to this file instead of printing it")


def schema_text() -> str:
    """The schema as a file holds it: indented, keys in order, so a regenerated file diffs cleanly. The
    models load here, not with the module, which every `asya` command imports for its parser."""
    from asya_cdk.config import mesh_schema

    return json.dumps(mesh_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def run(args: argparse.Namespace, console: Console) -> int:
    text = schema_text()
    if args.output is None:
        print(text, end="")  # plain stdout: the schema alone, for a pipe or a redirect
        return 0
    args.output.write_text(text)
    console.print(f"the mesh file's JSON Schema: {args.output}", highlight=False)
    return 0

"""`asya init [DIR] [--namespace NS] [--cdk]`: a project a team would commit, in a folder of its own.

What it writes comes from `asya_local/project_template/` (shipped in the package): `mesh.yaml` (one
flow through two actors, with comments pointing at the docs), the actors' code in `actors/`, in
`tests/` a test of each handler, of the flow in one process and of it on the local stack, a
`pyproject.toml` pinning this release of asya-aws, a `.gitignore` and a README of the next commands;
with `--cdk`, a `cdk.json` and an `app.py` for those who run `npx cdk deploy` themselves. Beside
mesh.yaml, `mesh.schema.json`: the file's JSON Schema (`asya schema`), which mesh.yaml's first line
points an editor at. Nothing is ever overwritten: if any of these files exists, nothing is written
and the command names them.
"""

from __future__ import annotations

import argparse
import re
from importlib import resources
from importlib.metadata import version
from pathlib import Path
from string import Template
from typing import Any

from rich.console import Console

from asya.names import DISTRIBUTION
from asya_local.arguments import command
from asya_local.schema_cli import SCHEMA_FILE, schema_text

TEMPLATE = "asya_local.project_template"
# what a project is made of: its path in the project → where it is in the template
FILES = {
    "mesh.yaml": "mesh.yaml.tmpl",
    "actors/text.py": "actors/text.py",
    "tests/test_actors.py": "tests/test_actors.py",
    "tests/test_flow.py": "tests/test_flow.py",
    "tests/test_on_local_stack.py": "tests/test_on_local_stack.py",
    "pyproject.toml": "pyproject.toml.tmpl",
    "README.md": "README.md.tmpl",
    ".gitignore": "gitignore",
}
CDK_FILES = {"cdk.json": "cdk/cdk.json", "app.py": "cdk/app.py"}
_NOT_IN_A_NAME = re.compile(r"[^a-z0-9]+")


class InitError(RuntimeError):
    """The project cannot be written where asked: the message says why, and nothing was written."""


def add_parser(commands: Any) -> None:
    init = command(
        commands,
        "init",
        "a new mesh project: mesh.yaml, two actors, their tests, pyproject.toml; never overwrites",
        "asya init my-mesh && cd my-mesh && asya up",
        "asya init . --namespace orders --cdk   # here, with cdk.json and app.py for npx cdk",
    )
    init.add_argument("directory", nargs="?", type=Path, default=Path(), help="where (default: here)")
    init.add_argument("--namespace", help="the mesh's namespace (default: from the folder's name)")
    init.add_argument("--cdk", action="store_true", help="also cdk.json and app.py, for npx cdk deploy")


def run(args: argparse.Namespace, console: Console) -> int:
    folder: Path = args.directory.resolve()
    namespace = args.namespace or namespace_for(folder.name)
    written = init_project(folder, namespace, cdk=args.cdk)
    console.print(f"a mesh project '{namespace}' in {folder}: {', '.join(written)}", highlight=False)
    there = "" if folder == Path.cwd() else f"cd {args.directory} && "
    console.print(f'next: {there}pip install -e ".[test]" && pytest && asya up', highlight=False, markup=False)
    return 0


def namespace_for(name: str) -> str:
    """A namespace made of a folder's name (lower case, digits and hyphens, at most 20 characters, so
    the resource names built on it stay within AWS's limits)."""
    namespace = _NOT_IN_A_NAME.sub("-", name.lower()).strip("-")[:20].strip("-")
    return namespace or "mesh"


def init_project(folder: Path, namespace: str, *, cdk: bool = False) -> list[str]:
    """Write the project into `folder` (made if missing); the files written, in order. Refuses, having
    written nothing, when any of them is there already."""
    files = {**FILES, **(CDK_FILES if cdk else {})}
    written = [*files, SCHEMA_FILE]
    existing = [name for name in written if (folder / name).exists()]
    if existing:
        raise InitError(f"{folder} already has {', '.join(existing)}: asya init never overwrites a file")
    template = resources.files(TEMPLATE)
    names = {"name": folder.name or namespace, "namespace": namespace, "version": version(DISTRIBUTION)}
    for target, source in files.items():
        text = template.joinpath(source).read_text()
        if source.endswith(".tmpl"):
            text = Template(text).safe_substitute(names)
        (folder / target).parent.mkdir(parents=True, exist_ok=True)
        (folder / target).write_text(text)
    (folder / SCHEMA_FILE).write_text(schema_text())  # made, not copied: this release's mesh file schema
    return written

"""Reading a mesh file: its shape (`asya_cdk.config`), what it names on disk, and every AWS quota and
naming rule it could hit at deploy (`asya_cdk.rules`, `asya_cdk.plan`), each problem found before
`cdk deploy` and named by file and field."""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import ValidationError

from asya.envelope import describe_validation_error
from asya_cdk.config import REQUIREMENTS_FILE, LoadedMesh, MeshConfig
from asya_cdk.needs import (
    s3_location,
)
from asya_cdk.plan import StackPlanError, plan_stacks
from asya_cdk.rules import mesh_problems


class MeshConfigError(ValueError):
    """The mesh file is wrong; the message names the file and the field."""


def load_mesh(path: str | Path) -> LoadedMesh:
    """Read and validate a mesh file; any problem is a `MeshConfigError` naming file and field. Beyond
    the file's own shape, every AWS quota and naming rule the mesh could hit at deploy is checked here
    (`asya_cdk.rules`), each problem on its own line."""
    file = Path(path)
    try:
        document = yaml.safe_load(file.read_text())
    except OSError as exc:
        raise MeshConfigError(f"{file}: cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise MeshConfigError(f"{file}: not valid YAML: {exc}") from None
    if not isinstance(document, dict):
        raise MeshConfigError(f"{file}: the mesh must be a mapping with namespace, actors and flows")
    try:
        config = MeshConfig.model_validate(document)
    except ValidationError as exc:
        raise MeshConfigError(f"{file}: {describe_validation_error(exc)}") from None
    mesh = LoadedMesh(config=config, base=file.resolve().parent)
    missing = path_problems(mesh)
    if missing:
        raise MeshConfigError("\n".join(f"{file}: {problem}" for problem in missing))
    problems = mesh_problems(mesh)
    if problems:
        raise MeshConfigError("\n".join(f"{file}: {problem}" for problem in problems))
    try:
        plan_stacks(config)  # a mesh too large even for nested stacks is refused here, not at deploy
    except StackPlanError as exc:
        raise MeshConfigError(f"{file}: {exc}") from None
    return mesh


def path_problems(mesh: LoadedMesh) -> list[str]:
    """What the mesh file names on disk and is not there, or is where it must not be: code folders, a
    second list of libraries, files to ship, secret values inside a folder that ships, bucket folders."""
    config = mesh.config
    problems = []
    for name, actor in config.actors.items():
        code = mesh.code_dir(name)
        if not code.is_dir():
            problems.append(f"actors.{name}.code: {actor.code!r} is not a directory (looked in {code})")
        elif actor.requirements is not None and (code / REQUIREMENTS_FILE).is_file():
            problems.append(
                f"actors.{name}.requirements: {code / REQUIREMENTS_FILE} declares this actor's libraries too; "
                "keep one of the two"
            )
        for variable, source in actor.files.items():
            if s3_location(source) is None and not mesh.local_file(source).exists():
                problems.append(
                    f"actors.{name}.files.{variable}: {source!r} is neither an s3:// URL nor a file or folder "
                    f"(looked in {mesh.local_file(source)})"
                )
        values = mesh.local_file(config.local.secrets_file) if config.local.secrets_file else None
        if values is not None and code in values.parents:
            problems.append(
                f"local.secrets_file: {values} is inside actors.{name}.code ({code}), which ships with the "
                "function; keep secret values outside every code folder"
            )
    for bucket, folder in config.local.buckets.items():
        if not mesh.local_file(folder).is_dir():
            problems.append(f"local.buckets.{bucket}: {folder!r} is not a folder")
    return problems

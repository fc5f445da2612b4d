"""Reading a mesh file: its shape (`asya_cdk.config`), what it names on disk, and every AWS quota and
naming rule it could hit at deploy (`asya_cdk.rules`, `asya_cdk.plan`), each problem found before
`cdk deploy` and named by file and field."""

from __future__ import annotations

from copy import deepcopy
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from asya.names import DISTRIBUTION
from asya_cdk.config import MESH_VERSION, REFERENCES_APART, MeshConfig
from asya_cdk.flow_compiler import FlowCompileError, compile_flow, program_location
from asya_cdk.flow_maps import GATHER, with_gather
from asya_cdk.loaded_mesh import REQUIREMENTS_FILE, LoadedMesh
from asya_cdk.mesh_error import MeshConfigError
from asya_cdk.needs import (
    s3_location,
)
from asya_cdk.plan import StackPlanError, plan_stacks
from asya_cdk.rules import mesh_problems
from asya_cdk.unknown_fields import field_problems
from asya_cdk.yaml_text import named_yaml

# MeshConfigError is `asya_cdk.mesh_error`'s, raised here and imported from here by the mesh's readers
__all__ = ["MeshConfigError", "compiled_programs", "load_mesh", "mesh_from_config", "path_problems"]


def load_mesh(path: str | Path) -> LoadedMesh:
    """Read and validate a mesh file; any problem is a `MeshConfigError` naming file and field, one
    problem a line, as many as one run can find: the fields' own problems, the names that do not
    resolve, what is missing on disk, and, once the rest is right, every AWS quota and naming rule the
    mesh could hit at deploy (`asya_cdk.rules`, `asya_cdk.plan`)."""
    file = Path(path)
    return _loaded(_document(file), file.resolve().parent, where=str(file))


def mesh_from_config(config: MeshConfig | dict[str, Any], base: str | Path) -> LoadedMesh:
    """A mesh given as an object instead of a file (an `AsyaMesh` prop built in code), checked exactly as
    `load_mesh` checks a file: `base` is the folder its relative code paths start from, and a problem is
    a `MeshConfigError` naming the field (and `base`, where a file's name would stand)."""
    document = config.model_dump(exclude_unset=True, by_alias=True) if isinstance(config, MeshConfig) else config
    return _loaded(document, Path(base).resolve(), where=f"mesh config (base {base})")


def _loaded(document: dict[str, Any], base: Path, *, where: str) -> LoadedMesh:
    newer = _newer_version(document)
    if newer:  # its other problems would be the fields this release does not know: noise
        raise MeshConfigError(f"{where}: {newer}")
    config, problems = _validated(document)
    if config is not None:
        references = config.reference_problems()
        programs, program_problems = compiled_programs(config, base) if not references else ({}, [])
        mapping = with_gather(config, programs)
        if mapping is not config and GATHER in config.actors:  # a program maps: the name is the mesh's own
            program_problems.append(f"actors.{GATHER}: the name of the join the mesh adds for maps (docs/flows.md)")
        config = mapping
        mesh = LoadedMesh.model_validate(
            {"config": config, "base": base, "programs": programs}, context={REFERENCES_APART: True}
        )
        problems += references + program_problems + path_problems(mesh)
        if not problems:  # the rules judge a mesh whose every field and name is right
            problems += mesh_problems(mesh) + _plan_problems(config)
    if problems:
        raise MeshConfigError("\n".join(f"{where}: {problem}" for problem in problems))
    return mesh


def _newer_version(document: dict[str, Any]) -> str | None:
    """Why a file written for a later format than `MESH_VERSION` is refused, naming both versions."""
    version = document.get("version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version <= MESH_VERSION:
        return None  # a wrong type or a version below 1 is the model's to report
    try:
        release = metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        release = "not installed"
    return (
        f"version: mesh file version {version} is newer than this asya-aws ({release}) reads "
        f"(up to version {MESH_VERSION}); upgrade asya-aws"
    )


def compiled_programs(config: MeshConfig, base: Path) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Each program flow compiled, and what keeps any from compiling (`flows.<name>.program: <file>
    line <n>: …`)."""
    programs, problems = {}, []
    for name, flow in config.flows.items():
        if flow.program is None:
            continue
        source, function = program_location(flow.program)
        try:
            programs[name] = compile_flow(
                base / source, function, source=source, actors=config.actors, joins=config.joins()
            )
        except FlowCompileError as exc:
            problems.append(f"flows.{name}.program: {exc}")
    return programs, problems


def _document(file: Path) -> dict[str, Any]:
    try:
        document = named_yaml(file.read_text(), str(file))
    except OSError as exc:
        raise MeshConfigError(f"{file}: cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise MeshConfigError(f"{file}: not valid YAML: {exc}") from None
    if not isinstance(document, dict):
        raise MeshConfigError(f"{file}: the mesh must be a mapping with namespace, actors and flows")
    return document


def _validated(document: dict[str, Any]) -> tuple[MeshConfig | None, list[str]]:
    """The mesh and its fields' problems. With problems, the mesh is the document with each wrong
    field left out (its default in its place), so that the names and paths it holds are checked in the
    same run; None when leaving them out cannot make it whole (a whole actor or list was wrong)."""
    context = {REFERENCES_APART: True}
    try:
        return MeshConfig.model_validate(document, context=context), []
    except ValidationError as exc:
        wrong = exc
    repaired = _without(document, [error["loc"] for error in wrong.errors()])
    config, checks = None, []
    if repaired is not None:
        try:
            config = MeshConfig.model_validate(repaired, context=context)
        except ValidationError as still:  # the checks a wrong field kept from running
            checks = still.errors(include_url=False)
    return config, field_problems(wrong, document, MeshConfig.model_json_schema(), checks)


def _without(document: dict[str, Any], locations: list[tuple[int | str, ...]]) -> dict[str, Any] | None:
    """A copy of the document without the fields at `locations`; None if one is a whole actor or flow,
    or lies in a list (leaving an item out would renumber the others' problems)."""
    copy = deepcopy(document)
    for location in locations:
        path = list(location[:-1]) if location[-1:] == ("[key]",) else list(location)
        if len(path) < (3 if path[:1] in (["actors"], ["flows"]) else 1) or any(isinstance(p, int) for p in path):
            return None
        parent: Any = copy
        for part in path[:-1]:
            parent = parent.get(part) if isinstance(parent, dict) else None
        if not isinstance(parent, dict):
            return None
        parent.pop(path[-1], None)
    return copy


def _plan_problems(config: MeshConfig) -> list[str]:
    try:
        plan_stacks(config)  # a mesh too large even for nested stacks is refused here, not at deploy
    except StackPlanError as exc:
        return [str(exc)]
    return []


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
        for variable, entry in actor.files.items():
            source = entry.source
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

"""What a real account already holds and a mesh's actors read, made on the local endpoint: the secrets
the actors name (`secrets:`) and buckets of the user's (`local.buckets`).

Secret values never come from the mesh file: they come from a YAML file of `name: value` the user keeps
out of git, `.asya/secrets.yaml` beside the mesh file unless `local.secrets_file` names another (a
mapping as a value is stored as its JSON, for a secret read by `key`), or from `asya secrets set`,
which writes that file (readable by its owner only) and, while a local stack runs, its endpoint too.
A secret with no local value stops `asya up` with the actor, the variable and the command that sets it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from asya_cdk.yaml_text import named_yaml

if TYPE_CHECKING:  # the models: `asya_local.commands` catches `LocalSecretError` without loading them
    from asya_cdk.loaded_mesh import LoadedMesh
    from asya_cdk.needs import SecretReference

SECRETS_FILE = Path(".asya") / "secrets.yaml"


class LocalSecretError(RuntimeError):
    """A secret an actor reads has no local value, or the secrets file cannot be read."""


@dataclass(frozen=True)
class NamedSecret:
    """One secret an actor reads: the field that names it, and the reference."""

    field: str
    variable: str
    reference: SecretReference


def secrets_file(mesh: LoadedMesh) -> Path:
    given = mesh.config.local.secrets_file
    return mesh.local_file(given) if given else mesh.base / SECRETS_FILE


def named_secrets(mesh: LoadedMesh) -> Iterator[NamedSecret]:
    for actor, settings in mesh.config.actors.items():
        for variable, reference in settings.secrets.items():
            yield NamedSecret(f"actors.{actor}.secrets.{variable}", variable, reference)


def read_values(file: Path) -> dict[str, str]:
    """The secrets file's values by name ({} when there is none); a mapping is kept as its JSON."""
    if not file.exists():
        return {}
    try:
        document = named_yaml(file.read_text(), str(file)) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise LocalSecretError(f"{file}: cannot read the local secrets: {exc}") from None
    if not isinstance(document, dict):
        raise LocalSecretError(f"{file}: the local secrets are a mapping of name: value")
    return {str(name): _as_text(value) for name, value in document.items()}


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def write_value(file: Path, name: str, value: str) -> None:
    """Set one secret in the secrets file, created readable by its owner only; in the default `.asya/`
    folder, git is told to ignore the folder's content."""
    values: dict[str, Any] = (yaml.safe_load(file.read_text()) or {}) if file.exists() else {}
    values[name] = value
    file.parent.mkdir(parents=True, exist_ok=True)
    ignore = file.parent / ".gitignore"
    if file.parent.name == SECRETS_FILE.parent.name and not ignore.exists():
        ignore.write_text("# asya's local state and secret values: never committed\n*\n")
    file.touch(mode=0o600)
    os.chmod(file, 0o600)
    file.write_text(yaml.safe_dump(values, default_flow_style=False, sort_keys=True))


def store_secret(secretsmanager: Any, ssm: Any, reference: SecretReference, value: str) -> None:
    """Create or update the secret (or SecureString parameter) on the endpoint, under its name."""
    if reference.secret is not None:
        try:
            secretsmanager.create_secret(Name=reference.name, SecretString=value)
        except secretsmanager.exceptions.ResourceExistsException:
            secretsmanager.put_secret_value(SecretId=reference.name, SecretString=value)
    else:
        ssm.put_parameter(Name=reference.name, Value=value, Type="SecureString", Overwrite=True)


def local_secret_values(mesh: LoadedMesh) -> dict[str, str]:
    """The local value of every secret the mesh's actors read, by name; one without a value stops here,
    before anything starts, naming the field and how to set it."""
    file = secrets_file(mesh)
    values = read_values(file)
    for named in named_secrets(mesh):
        name = named.reference.name
        if name not in values:
            raise LocalSecretError(
                f"{named.field}: no local value for {'secret' if named.reference.secret else 'parameter'} "
                f"{name!r}; set one with `asya secrets set {name} --config <mesh file>` (it goes into {file})"
            )
    return values


def store_secrets(mesh: LoadedMesh, secretsmanager: Any, ssm: Any) -> None:
    """Every secret the mesh's actors read, with its value from the secrets file."""
    values = local_secret_values(mesh)
    for named in named_secrets(mesh):
        store_secret(secretsmanager, ssm, named.reference, values[named.reference.name])


def fill_buckets(mesh: LoadedMesh, s3: Any) -> None:
    """Each bucket of `local.buckets`, with its folder's files under the same keys."""
    for bucket, folder in mesh.config.local.buckets.items():
        s3.create_bucket(Bucket=bucket)
        root = mesh.local_file(folder)
        for file in sorted(root.rglob("*")):
            if file.is_file():
                s3.put_object(Bucket=bucket, Key=file.relative_to(root).as_posix(), Body=file.read_bytes())

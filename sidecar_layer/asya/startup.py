"""What an actor's execution environment does once, before its handler is loaded: its secrets and its
files (the mesh file's `secrets` and `files`), each put in the environment variable the actor named.

It runs in Lambda's init phase (`asya.actor`), so a model file is on disk and an API key is set before
the handler's class is created, and a provisioned environment has done all of it before its first
envelope. Secrets are read by `asya.secret_reads` (kept, so `secret()` re-reads a rotated one at most
every `SECRET_MAX_AGE` seconds; parameters ten a call); its clients connect briefly
(`asya.clients.init_client`), so a VPC without a route to a service fails the start in seconds, naming
the service. Their values go into this process's environment only, never
into the function's configuration, a log line, an envelope or a task record. Files are fetched from
S3 into the execution environment's temporary folder (Lambda's /tmp, `ephemeral_storage` in size): an
object, a folder the mesh shipped as a zip (unpacked), or every object under an `s3://` prefix.

The locations travel in two variables the CDK app sets (`ASYA_SECRETS`, `ASYA_FILES`); both are
written and read here, so the format has one definition.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import zipfile
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from asya.clients import UnreachableError, connect_failures, init_client, unreachable
from asya.secret_reads import SecretError, SecretReader
from asya.variables import FILES, SECRETS, ConfigError

SECRET_MAX_AGE = 300  # seconds a secret's value is reused before `secret()` reads it again
FileKind = Literal["file", "zip", "prefix"]


@dataclass(frozen=True)
class FileSource:
    """Where one of an actor's files comes from: an object (`file`), a zip of a folder (`zip`, unpacked
    into a folder of that name) or every object under a prefix (`prefix`, into a folder); `name` is
    the file's or folder's name on disk."""

    url: str
    name: str
    kind: FileKind

    def encode(self) -> list[str]:
        return [self.url, self.name, self.kind]

    @staticmethod
    def decode(variable: str, value: Any) -> FileSource:
        if (
            not isinstance(value, list)
            or len(value) != 3
            or not all(isinstance(part, str) for part in value)
            or value[2] not in ("file", "zip", "prefix")
            or not value[0].startswith("s3://")
        ):
            raise ConfigError(f"{FILES.name}: {variable} must be [s3 URL, name, file|zip|prefix], got {value!r}")
        return FileSource(value[0], value[1], value[2])


def encode_files(files: Mapping[str, FileSource]) -> str:
    return json.dumps({variable: source.encode() for variable, source in files.items()}, separators=(",", ":"))


def decode_files(raw: str) -> dict[str, FileSource]:
    return {variable: FileSource.decode(variable, value) for variable, value in _json_object(FILES.name, raw).items()}


def encode_secrets(secrets: Mapping[str, str]) -> str:
    """`{variable: location}`, a location `secretsmanager:<name or ARN>` or `ssm:<name>`, then `#<key>`
    for one field of a JSON value."""
    return json.dumps(dict(secrets), separators=(",", ":"))


def decode_secrets(raw: str) -> dict[str, str]:
    secrets = _json_object(SECRETS.name, raw)
    for variable, location in secrets.items():
        if not isinstance(location, str) or not location.startswith(("secretsmanager:", "ssm:")):
            raise ConfigError(f"{SECRETS.name}: {variable} must be 'secretsmanager:<name>' or 'ssm:<name>'")
    return secrets


def _json_object(name: str, raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{name} is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{name} must be a JSON object")
    return value


READER = SecretReader(SECRET_MAX_AGE)  # this execution environment's secrets, kept SECRET_MAX_AGE seconds


def prepare(env: MutableMapping[str, str] | None = None) -> None:
    """Fetch the actor's secrets and files and set their variables in `env` (the process environment)."""
    env = os.environ if env is None else env
    secrets = decode_secrets(env[SECRETS.name]) if env.get(SECRETS.name) else {}
    env.update(_read_secrets(secrets))
    files = decode_files(env[FILES.name]) if env.get(FILES.name) else {}
    if files:
        s3 = init_client("s3")
        for variable, source in files.items():
            env[variable] = str(fetch_file(variable, source, s3))


def secret(variable: str) -> str:
    """The current value of one of the actor's secrets, by its variable: read at most every
    `SECRET_MAX_AGE` seconds, so a long-lived environment sees a rotated secret within minutes."""
    secrets = decode_secrets(os.environ.get(SECRETS.name, "") or "{}")
    if variable not in secrets:
        raise KeyError(f"{variable} is not one of this actor's secrets (the mesh file's `secrets`)")
    value = _read_secrets({variable: secrets[variable]})[variable]
    os.environ[variable] = value
    return value


def _read_secrets(locations: Mapping[str, str]) -> dict[str, str]:
    """`{variable: value}` for `{variable: location}`: every secret read at once (`SecretReader`), then
    the field a location names (`#<key>`) taken from its JSON value."""
    wanted: dict[str, tuple[str, str]] = {}
    for variable, location in locations.items():
        service, _, rest = location.partition(":")
        wanted[variable] = (service, rest.partition("#")[0])
    raw = READER.read(wanted)
    return {variable: _field(variable, location, raw[variable]) for variable, location in locations.items()}


def _field(variable: str, location: str, raw: str) -> str:
    service, _, rest = location.partition(":")
    name, _, key = rest.partition("#")
    if not key:
        return raw
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        raise SecretError(f"{variable}: {location} is not a JSON object, so it has no field {key!r}") from None
    if not isinstance(value, dict) or key not in value:
        raise SecretError(f"{variable}: {service} {name!r} has no field {key!r}")
    return value[key] if isinstance(value[key], str) else json.dumps(value[key])


def files_folder() -> Path:
    """Where files land: the execution environment's temporary folder (Lambda's /tmp)."""
    return Path(tempfile.gettempdir()) / "asya-files"


def fetch_file(variable: str, source: FileSource, s3: Any = None) -> Path:
    """Download one file (or folder) into the files folder and return its path; a bucket that cannot
    be reached is an `UnreachableError` naming the variable and S3."""
    try:
        return _fetch(variable, source, s3 or init_client("s3"))
    except connect_failures() as exc:
        raise UnreachableError(f"{variable}: {unreachable('s3', exc)}") from None


def _fetch(variable: str, source: FileSource, s3: Any) -> Path:
    bucket, _, key = source.url.removeprefix("s3://").partition("/")
    home = files_folder() / variable
    shutil.rmtree(home, ignore_errors=True)  # a second init in the same environment starts clean
    home.mkdir(parents=True)
    path = home / source.name
    if source.kind == "file":
        s3.download_file(bucket, key, str(path))
    elif source.kind == "zip":
        archive = home / f".{source.name}.zip"
        s3.download_file(bucket, key, str(archive))
        with zipfile.ZipFile(archive) as opened:
            opened.extractall(path)  # drops absolute paths and '..', so nothing lands outside `path`
        archive.unlink()
    else:
        _fetch_prefix(s3, bucket, key, path)
    return path


def _fetch_prefix(s3: Any, bucket: str, prefix: str, folder: Path) -> None:
    folder.mkdir()
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            relative = item["Key"][len(prefix) :].lstrip("/")
            target = (folder / relative).resolve()
            if not relative or relative.endswith("/") or folder.resolve() not in target.parents:
                continue  # a "folder" marker, or a key that would land outside the folder
            target.parent.mkdir(parents=True, exist_ok=True)
            s3.download_file(bucket, item["Key"], str(target))

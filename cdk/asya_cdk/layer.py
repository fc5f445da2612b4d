"""The sidecar Lambda layer: the `asya` package and its dependencies, built for the function's platform;
and the gateway functions' code, with the few packages only they need.

Bundling runs pip on this machine for the target platform (`--platform manylinux2014_<arch>`,
binary wheels only), so no Docker is needed. The layer's dependencies are the project's own in
`pyproject.toml` (tracing's X-Ray SDK included), minus the AWS SDK for Python and the packages it
brings, which the Lambda runtime provides: a second, different botocore in the layer would shadow the
runtime's and no longer match its boto3. The gateway's (its `gateway` extra: JSON Schema validation,
the MCP types) ship in its functions' code, without their dependencies, which the layer has. Nothing
is byte-compiled on this machine (`--no-compile`).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import aws_cdk as cdk
import jsii
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

ROOT = Path(__file__).resolve().parents[2]
LAYER_SOURCE = ROOT / "sidecar_layer"
GATEWAY_SOURCE = ROOT / "gateway_api"
RUNTIME = lambda_.Runtime.PYTHON_3_14
_PLATFORMS = {"arm64": "manylinux2014_aarch64", "x86_64": "manylinux2014_x86_64"}
# The AWS SDK for Python and what it depends on: Lambda's Python runtimes include them.
PROVIDED_BY_RUNTIME = frozenset({"boto3", "botocore", "s3transfer", "jmespath", "python-dateutil", "urllib3", "six"})


def requirements(extra: str | None = None) -> list[str]:
    """The project's dependencies for the layer (the AWS SDK left to the runtime), or an extra's."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    if extra is not None:
        return list(project["optional-dependencies"][extra])
    return [req for req in project["dependencies"] if not req.startswith("boto3")]


def remove_provided(target: Path, provided: frozenset[str]) -> None:
    """Delete what pip installed of the `provided` distributions (each one's own file list, inside
    `target` only: a script's entry may point outside it)."""
    target = target.resolve()
    found = [
        d
        for d in metadata.distributions(path=[str(target)])
        if d.metadata["Name"].lower().replace("_", "-") in provided
    ]
    files = [(target / str(file)).resolve() for distribution in found for file in distribution.files or []]
    files = [file for file in files if target in file.parents]
    for file in files:
        file.unlink(missing_ok=True)
    folders = {parent for file in files for parent in file.parents if target in parent.parents}
    for folder in sorted(folders, key=lambda f: len(f.parts), reverse=True):
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()


@jsii.implements(cdk.ILocalBundling)
class PipBundling:
    """Dependencies (the layer's, unless `needs` says which) for a Linux platform and Python version,
    plus some of the project's packages (`packages`: folder name in the bundle → source folder), in
    `subdir` of the bundle, without the distributions the target platform already `provided`.
    `alone`: the dependencies' own dependencies are left out (the layer has them)."""

    def __init__(
        self,
        architecture: str,
        python_version: str,
        packages: dict[str, Path],
        subdir: str = "",
        provided: frozenset[str] = PROVIDED_BY_RUNTIME,
        *,
        needs: list[str] | None = None,
        alone: bool = False,
    ) -> None:
        self.architecture = architecture
        self.python_version = python_version
        self.packages = packages
        self.subdir = subdir
        self.provided = provided
        self.needs = requirements() if needs is None else needs
        self.alone = alone

    def try_bundle(self, output_dir: str, _options: cdk.BundlingOptions) -> bool:
        target = Path(output_dir) / self.subdir
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--no-compile", "--target", str(target),
             "--platform", _PLATFORMS[self.architecture], "--implementation", "cp",
             "--python-version", self.python_version, "--only-binary=:all:", *(["--no-deps"] if self.alone else []),
             *self.needs],
            check=True,
        )  # fmt: skip
        remove_provided(target, self.provided)
        for name, source in self.packages.items():
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__"))
        return True


def layer_bundling(architecture: str, python_version: str = RUNTIME.name.removeprefix("python")) -> PipBundling:
    """The layer's content: `asya` and the project's dependencies, under `python/`."""
    return PipBundling(architecture, python_version, {"asya": LAYER_SOURCE / "asya"}, subdir="python")


def gateway_bundling(architecture: str, python_version: str = RUNTIME.name.removeprefix("python")) -> PipBundling:
    """The gateway functions' code: `asya_gateway` and the `gateway` extra, whose own dependencies the
    layer has."""
    packages = {"asya_gateway": GATEWAY_SOURCE / "asya_gateway"}
    return PipBundling(architecture, python_version, packages, needs=requirements("gateway"), alone=True)


class SidecarLayer(Construct):
    """One layer version per architecture; every actor and crew function of that architecture uses it."""

    def __init__(self, scope: Construct, construct_id: str, *, architecture: str) -> None:
        super().__init__(scope, construct_id)
        arch = lambda_.Architecture.ARM_64 if architecture == "arm64" else lambda_.Architecture.X86_64
        self.layer = lambda_.LayerVersion(
            self,
            "Layer",
            code=built_code(LAYER_SOURCE, layer_bundling(architecture)),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[arch],
            description="asya sidecar: envelope routing, resiliency and telemetry around actor handlers",
        )
        self.architecture = arch


def gateway_code(architecture: str) -> lambda_.Code:
    """The gateway functions' code: `asya_gateway` and its `gateway` extra."""
    return built_code(GATEWAY_SOURCE, gateway_bundling(architecture))


def built_code(source: Path, bundling: PipBundling) -> lambda_.Code:
    """Code that pip builds on this machine, identified by what the build puts in it: what pip installs
    is not in the source folder, so a changed pin must still make a new asset."""
    return lambda_.Code.from_asset(
        str(source),
        exclude=["**/__pycache__", "*.md"],
        asset_hash_type=cdk.AssetHashType.OUTPUT,
        # jsii hands the options over positionally, unlike the generated stub's keyword signature
        bundling=cdk.BundlingOptions(image=RUNTIME.bundling_image, local=bundling),  # type: ignore[arg-type]
    )

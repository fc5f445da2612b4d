"""The sidecar Lambda layer: the `asya` package and its dependencies, built for the function's platform;
and the gateway functions' code, with the few packages only they need.

Bundling installs on this machine for the target platform (`asya_cdk.libraries`: binary wheels only,
cached by content), so no Docker is needed. The layer's dependencies are the installed distribution's
own (`asya_cdk.sources`: tracing's X-Ray SDK included), minus the AWS SDK for Python and the packages it
brings, which the Lambda runtime provides: a second, different botocore in the layer would shadow the
runtime's and no longer match its boto3. The gateway's (its `gateway` extra: JSON Schema validation,
the MCP types) ship in its functions' code, without their dependencies, which the layer has. Nothing
is byte-compiled on this machine.
"""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
import jsii
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from asya_cdk.libraries import Build, Requirements, Target, copy_into, install
from asya_cdk.sources import SOURCE_IGNORED, package_folder, requirements, shipped

RUNTIME = lambda_.Runtime.PYTHON_3_14
LAMBDA_PYTHON = RUNTIME.name.removeprefix("python")
# The AWS SDK for Python and what it depends on: Lambda's Python runtimes include them.
PROVIDED_BY_RUNTIME = frozenset({"boto3", "botocore", "s3transfer", "jmespath", "python-dateutil", "urllib3", "six"})


def layer_requirements() -> list[str]:
    """The project's dependencies for the layer: the AWS SDK is left to the runtime."""
    return [line for line in requirements() if not line.startswith("boto3")]


def layer_build(target: Target) -> Build:
    """The layer's dependencies: the project's, without what the Lambda runtime provides."""
    declared = Requirements(tuple(layer_requirements()), source="the sidecar layer (asya-aws's dependencies)")
    return Build(declared, target, without=PROVIDED_BY_RUNTIME)


def gateway_build(target: Target) -> Build:
    """The gateway's own dependencies alone: the layer has what they depend on."""
    declared = Requirements(tuple(requirements("gateway")), source="the gateway (asya-aws's extra gateway)")
    return Build(declared, target, no_deps=True)


@jsii.implements(cdk.ILocalBundling)
class LibraryBundling:
    """A bundle made of installed builds and source folders, under `subdir`: each of `builds` installed
    (or taken from the cache), then each folder of `folders` (destination in the bundle → source; ""
    puts the source's content at the bundle's root), leaving out what `ignore` matches."""

    def __init__(
        self,
        builds: list[Build],
        folders: dict[str, Path],
        subdir: str = "",
        ignore: tuple[str, ...] = SOURCE_IGNORED,
        files: dict[str, str] | None = None,
    ) -> None:
        self.builds = builds
        self.folders = folders
        self.subdir = subdir
        self.ignore = ignore
        self.files = files or {}  # written into the bundle as they are: name → text

    def try_bundle(self, output_dir: str, _options: cdk.BundlingOptions) -> bool:
        target = Path(output_dir) / self.subdir
        for build in self.builds:
            copy_into(install(build).path, target)
        for name, source in self.folders.items():
            copy_into(source, target / name, self.ignore)
        for name, text in self.files.items():
            (target / name).write_text(text)
        return True


def layer_bundling(architecture: str, python: str = LAMBDA_PYTHON) -> LibraryBundling:
    """The layer's content: `asya` and the project's dependencies, under `python/`."""
    target = Target.linux(architecture, python)
    return LibraryBundling([layer_build(target)], {"asya": package_folder("asya")}, subdir="python")


def gateway_bundling(
    architecture: str, python: str = LAMBDA_PYTHON, files: dict[str, str] | None = None
) -> LibraryBundling:
    """The gateway functions' code: `asya_gateway` and the `gateway` extra, whose own dependencies the
    layer has."""
    target = Target.linux(architecture, python)
    folders = {"asya_gateway": package_folder("asya_gateway")}
    return LibraryBundling([gateway_build(target)], folders, files=files)


class SidecarLayer(Construct):
    """One layer version per architecture; every actor and crew function of that architecture uses it."""

    def __init__(self, scope: Construct, construct_id: str, *, architecture: str) -> None:
        super().__init__(scope, construct_id)
        arch = lambda_.Architecture.ARM_64 if architecture == "arm64" else lambda_.Architecture.X86_64
        self.layer = lambda_.LayerVersion(
            self,
            "Layer",
            code=built_code(shipped("asya"), layer_bundling(architecture)),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[arch],
            description="asya sidecar: envelope routing, resiliency and telemetry around actor handlers",
        )
        self.architecture = arch


def gateway_code(architecture: str, files: dict[str, str] | None = None) -> lambda_.Code:
    """The gateway functions' code: `asya_gateway` and its `gateway` extra, and `files` beside them
    (the mesh's compiled flow programs)."""
    return built_code(shipped("asya_gateway"), gateway_bundling(architecture, files=files))


def built_code(source: Path, bundling: LibraryBundling) -> lambda_.Code:
    """Code built on this machine, identified by what the build puts in it: what is installed is not
    in the source folder, so a changed pin must still make a new asset. `source` holds the packages
    themselves (`asya_cdk.sources.shipped`): a synthesis without bundling (the local stack's) ships it
    as it is."""
    return lambda_.Code.from_asset(
        str(source),
        exclude=["**/__pycache__", "*.md"],
        asset_hash_type=cdk.AssetHashType.OUTPUT,
        # jsii hands the options over positionally, unlike the generated stub's keyword signature
        bundling=cdk.BundlingOptions(image=RUNTIME.bundling_image, local=bundling),  # type: ignore[arg-type]
    )

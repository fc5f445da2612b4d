"""How an actor's function is packaged, and how big it is against Lambda's limits.

A `.zip` function (`package: zip`, the default) is its code folder plus its declared libraries,
beside the sidecar layer. A container image (`package: image`) is AWS's Python base image for the
runtime and architecture with the same content in `/var/task`: the layer's libraries and `asya`,
the actor's libraries and its code, so the handler contract is the same. Both are prepared on this
machine from the same cached builds (`asya_cdk.libraries`); an image needs Docker only when
`cdk deploy` builds it from the prepared folder.

An actor's libraries are resolved together with the sidecar's, so one consistent set is chosen (a
conflict fails here, naming both); then the distributions the layer already has at the same version
are left out, and the AWS SDK the runtime provides unless the actor names it itself (a newer boto3,
say). A distribution the actor needs at another version than the layer's stays in the function's
code, which Lambda puts before the layer on the path.

Lambda refuses a function whose code and layers unzip to more than 250 MB (262,144,000 bytes), and an
image over 10 GB. `function_sizes` measures what each actor's function will unzip to, for
`asya check`, `cdk synth` and `asya up` alike.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_ecr_assets as ecr_assets
from aws_cdk import aws_lambda as lambda_

from asya_cdk.layer import (
    LAMBDA_PYTHON,
    PROVIDED_BY_RUNTIME,
    RUNTIME,
    LibraryBundling,
    layer_build,
    layer_requirements,
)
from asya_cdk.libraries import (
    Build,
    Distribution,
    Installed,
    Requirements,
    Target,
    cache_root,
    cached_folder,
    copy_into,
    folder_size,
    install,
)
from asya_cdk.loaded_mesh import LoadedMesh
from asya_cdk.loading import MeshConfigError
from asya_cdk.sources import package_folder

LAMBDA_ZIP_MAX_BYTES = 262_144_000  # "250 MB": a function's code and all its layers, unzipped
LAMBDA_IMAGE_MAX_BYTES = 10 * 1024**3  # "10 GB": a container image, uncompressed
ACTOR_ENTRY = "asya.actor.lambda_handler"  # an actor function's handler: importing it is the init
# What a function's code folder does not ship: one list for actors' folders and the mesh's own (`lambdas/`),
# so a folder shared by both is one asset. A folder beside a mesh file may hold a checkout's tooling, and
# the local stack's state: `.asya/` holds the local secret values, which must never ship.
ACTOR_CODE_EXCLUDE = (
    "**/__pycache__",
    "**/*.pyc",
    "*.md",
    "tests",
    ".venv",
    ".git",
    ".asya",
    "node_modules",
    "cdk.out",
)
IMAGE_PLATFORMS = {"arm64": ecr_assets.Platform.LINUX_ARM64, "x86_64": ecr_assets.Platform.LINUX_AMD64}
IMAGE_FORMAT = 1  # bump when the prepared folder's layout or its Dockerfile changes
# BuildKit attaches a provenance attestation to every build unless this is set, which makes the pushed
# artifact an image index that Lambda refuses. The CDK's image assets have no option for BuildKit's
# `--provenance=false` (and an `--output` option cannot drop attestations), so the CDK CLI is run with
# this in its environment: cdk-assets runs `docker build` with it.
NO_ATTESTATIONS = "BUILDX_NO_DEFAULT_ATTESTATIONS"
CONTAINERD_SNAPSHOTTER = "io.containerd.snapshotter.v1"  # `docker info`'s driver type with the containerd store


def name_patterns(excludes: tuple[str, ...]) -> tuple[str, ...]:
    """The exclude globs as patterns on file and folder names (`shutil.ignore_patterns`)."""
    return tuple(pattern.removeprefix("**/") for pattern in excludes)


def lambda_target(architecture: str) -> Target:
    return Target.linux(architecture, LAMBDA_PYTHON)


def layer_libraries(target: Target) -> Installed:
    """The sidecar layer's libraries for a target (installed, or from the cache)."""
    return install(layer_build(target))


def actor_build(mesh: LoadedMesh, actor: str, target: Target, layer: Installed) -> Build | None:
    """The actor's libraries for `target`, beside `layer` (the sidecar's for the same target); None if it
    declares none."""
    own = mesh.requirements(actor)
    if not own:
        return None
    with_sidecar = own + Requirements(tuple(layer_requirements()))
    # the runtime's SDK is left to it, unless the actor names a part of it: then all of it ships, as
    # one boto3 beside another botocore would not work
    ships_sdk = bool(own.named() & PROVIDED_BY_RUNTIME)
    return Build(
        with_sidecar,
        target,
        without=frozenset() if ships_sdk else PROVIDED_BY_RUNTIME,
        without_versions=layer.versions(),
    )


def actor_libraries(mesh: LoadedMesh, actor: str, target: Target) -> tuple[Installed, Installed | None]:
    """The layer's libraries and the actor's own (None without any) for `target`."""
    layer = layer_libraries(target)
    build = actor_build(mesh, actor, target, layer)
    return layer, (install(build) if build is not None else None)


def megabytes(size: int) -> str:
    return f"{size / 1_000_000:,.1f} MB"


@dataclass(frozen=True)
class FunctionSize:
    """What one actor's function unzips to (`parts`, in bytes), its largest distributions, and the
    layers of its own whose size is not known here (ARNs the mesh file names)."""

    actor: str
    package: str
    parts: dict[str, int]
    distributions: tuple[Distribution, ...]
    extra_layers: int = 0

    @property
    def total(self) -> int:
        return sum(self.parts.values())

    @property
    def limit(self) -> int:
        return LAMBDA_IMAGE_MAX_BYTES if self.package == "image" else LAMBDA_ZIP_MAX_BYTES

    def describe(self) -> str:
        parts = ", ".join(f"{name} {megabytes(size)}" for name, size in self.parts.items())
        unknown = f", and {self.extra_layers} layer(s) of unknown size" if self.extra_layers else ""
        kind = "image" if self.package == "image" else "code and layers"
        return f"{megabytes(self.total)} of {megabytes(self.limit)} ({kind}: {parts}{unknown})"

    def largest(self, count: int = 5) -> str:
        ranked = sorted(self.distributions, key=lambda d: -d.size)[:count]
        return ", ".join(f"{d.name} {megabytes(d.size)}" for d in ranked)

    def problem(self) -> str | None:
        if self.total <= self.limit:
            return None
        if self.package == "image":
            return (
                f"actors.{self.actor}: its image would hold {megabytes(self.total)} of libraries and code, over "
                f"Lambda's {megabytes(self.limit)} for a container image (largest: {self.largest()})"
            )
        return (
            f"actors.{self.actor}: its code, libraries and the sidecar layer unzip to {megabytes(self.total)}, over "
            f"Lambda's {megabytes(self.limit)} (250 MB) for a function and its layers; the largest packages: "
            f"{self.largest()}; ship it as a container image (package: image, up to 10 GB)"
        )


def code_size(folder: Path) -> int:
    return folder_size(folder, name_patterns(ACTOR_CODE_EXCLUDE))


def function_size(mesh: LoadedMesh, actor: str) -> FunctionSize:
    """What the actor's Lambda function unzips to on its own platform, its libraries installed for it."""
    settings = mesh.config.actors[actor]
    layer, own = actor_libraries(mesh, actor, lambda_target(settings.architecture))
    parts = {"code": code_size(mesh.code_dir(actor))}
    if own is not None:
        parts["libraries"] = own.size
    parts["sidecar"] = layer.size + folder_size(package_folder("asya"), name_patterns(ACTOR_CODE_EXCLUDE))
    distributions = {**layer.distributions, **(own.distributions if own is not None else {})}
    return FunctionSize(actor, settings.package, parts, tuple(distributions.values()), len(settings.layers))


def function_sizes(mesh: LoadedMesh) -> list[FunctionSize]:
    """Every Lambda actor's function size (Spark actors' handlers run in their jobs, not in Lambda)."""
    return [function_size(mesh, name) for name, a in mesh.config.actors.items() if a.runtime == "lambda"]


def zip_code(mesh: LoadedMesh, actor: str, *, bundle: bool) -> lambda_.Code:
    """A `.zip` actor's code: its folder and, when `bundle` (the stack is synthesized for AWS), its
    libraries installed for its platform. Without `bundle` the folder alone is the asset: the local
    stack imports the libraries from an environment of its own (`asya_local.runtime`)."""
    folder = mesh.code_dir(actor)
    target = lambda_target(mesh.config.actors[actor].architecture)
    build = actor_build(mesh, actor, target, layer_libraries(target)) if bundle else None
    if build is None:
        return code_folder(folder)
    bundling = LibraryBundling([build], {"": folder}, ignore=name_patterns(ACTOR_CODE_EXCLUDE))
    return lambda_.Code.from_asset(
        str(folder),
        exclude=list(ACTOR_CODE_EXCLUDE),
        asset_hash_type=cdk.AssetHashType.OUTPUT,
        # jsii hands the options over positionally, unlike the generated stub's keyword signature
        bundling=cdk.BundlingOptions(image=RUNTIME.bundling_image, local=bundling),  # type: ignore[arg-type]
    )


def code_folder(folder: Path) -> lambda_.Code:
    """A function's code as it is in a folder: an actor's, or the crew's and the Spark functions'."""
    return lambda_.Code.from_asset(str(folder), exclude=list(ACTOR_CODE_EXCLUDE))


def image_code(mesh: LoadedMesh, actor: str, *, bundle: bool) -> lambda_.Code:
    """A `package: image` actor's code: the folder `cdk deploy` builds the image from (with `bundle`,
    everything the image holds; without, as the local stack synthesizes, only its Dockerfile and code,
    since the image is never built locally)."""
    settings = mesh.config.actors[actor]
    return lambda_.Code.from_asset_image(
        str(image_source(mesh, actor, bundle=bundle)),
        cmd=[ACTOR_ENTRY],
        platform=IMAGE_PLATFORMS[settings.architecture],
    )


def image_source(mesh: LoadedMesh, actor: str, *, bundle: bool) -> Path:
    """The folder an actor's image is built from, for a Lambda function or a container actor's task."""
    return image_folder(mesh, actor) if bundle else _dockerfile_only(mesh, actor)


DOCKERFILE = """\
# The function of actor {actor}: AWS's base image for the Lambda runtime, and in /var/task the sidecar,
# the actor's libraries and its code, prepared by the mesh's CDK app (asya_cdk.packaging).
FROM public.ecr.aws/lambda/python:{python}
COPY task/ ${{LAMBDA_TASK_ROOT}}/
CMD ["{entry}"]
"""


def image_folder(mesh: LoadedMesh, actor: str) -> Path:
    """The image's build folder: its Dockerfile and `task/` (the layer's libraries and `asya`, the actor's
    libraries, its code), prepared once per content in the cache; the same builds a `.zip` uses."""
    settings = mesh.config.actors[actor]
    target = lambda_target(settings.architecture)
    layer, own = actor_libraries(mesh, actor, target)
    code = mesh.code_dir(actor)
    dockerfile = DOCKERFILE.format(actor=actor, python=LAMBDA_PYTHON, entry=ACTOR_ENTRY)
    key = _digest(
        IMAGE_FORMAT,
        dockerfile,
        str(layer.path),
        str(own.path) if own else "",
        cdk.FileSystem.fingerprint(str(package_folder("asya")), exclude=list(ACTOR_CODE_EXCLUDE)),
        cdk.FileSystem.fingerprint(str(code), exclude=list(ACTOR_CODE_EXCLUDE)),
    )

    def make(staging: Path) -> None:
        task = staging / "task"
        copy_into(layer.path, task)
        copy_into(package_folder("asya"), task / "asya", name_patterns(ACTOR_CODE_EXCLUDE))
        if own is not None:
            copy_into(own.path, task)
        copy_into(code, task, name_patterns(ACTOR_CODE_EXCLUDE))
        (staging / "Dockerfile").write_text(dockerfile)

    return cached_folder(cache_root() / "images" / key, make)


def _dockerfile_only(mesh: LoadedMesh, actor: str) -> Path:
    """A build folder with the Dockerfile and the actor's code alone: what a synth without bundling
    refers to (the local stack never builds the image; it runs the actor from its own environment)."""
    code = mesh.code_dir(actor)
    dockerfile = DOCKERFILE.format(actor=actor, python=LAMBDA_PYTHON, entry=ACTOR_ENTRY)
    fingerprint = cdk.FileSystem.fingerprint(str(code), exclude=list(ACTOR_CODE_EXCLUDE))

    def make(staging: Path) -> None:
        copy_into(code, staging / "task", name_patterns(ACTOR_CODE_EXCLUDE))
        (staging / "Dockerfile").write_text(dockerfile)

    return cached_folder(cache_root() / "images" / f"unbuilt-{_digest(IMAGE_FORMAT, dockerfile, fingerprint)}", make)


def _digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps([str(part) for part in parts]).encode()).hexdigest()[:32]


def docker_problem(mesh: LoadedMesh, environ: Mapping[str, str] = os.environ) -> str | None:
    """Why `cdk deploy`, run with `environ`, could not build this mesh's container images here, or would
    push images Lambda refuses; None when there is no image actor, or the Docker engine answers and its
    images will be single manifests."""
    images = [name for name, actor in mesh.config.actors.items() if actor.package == "image"]
    if not images:
        return None
    named = ", ".join(f"actors.{name}" for name in images)
    docker = shutil.which("docker")
    if docker is None:
        return (
            f"{named}: package: image needs Docker to build at cdk deploy, and there is no docker command here; "
            "deploy from a machine that has it"
        )
    answer = subprocess.run(
        [docker, "info", "--format", "{{json .DriverStatus}}"], capture_output=True, text=True, check=False
    )
    if answer.returncode != 0:
        said = (answer.stderr.strip().splitlines() or ["no answer"])[-1]
        return (
            f"{named}: package: image needs Docker to build at cdk deploy, and its engine does not answer ({said}); "
            "start Docker, or deploy from a machine that has it"
        )
    if _containerd_store(answer.stdout) and not _attestations_off(environ):
        return (
            f"{named}: this Docker keeps images in the containerd image store, whose builds push an image index "
            "with a provenance attestation beside the image, and Lambda refuses a function on an index; "
            f"run cdk deploy with {NO_ATTESTATIONS}=1 in its environment (asya deploy sets it)"
        )
    return None


def _containerd_store(driver_status: str) -> bool:
    """Whether `docker info`'s driver status names the containerd snapshotter (the containerd image store)."""
    try:
        pairs = json.loads(driver_status or "null") or []
    except ValueError:
        return False
    return any(CONTAINERD_SNAPSHOTTER in str(value) for pair in pairs for value in pair)


def _attestations_off(environ: Mapping[str, str]) -> bool:
    return environ.get(NO_ATTESTATIONS, "").strip().lower() in {"1", "true"}


def refuse_oversized_functions(mesh: LoadedMesh) -> None:
    """Fail as `cdk synth` fails for an actor that Lambda would refuse for its size (its libraries
    installed for its Lambda platform, as for a deploy): what the local stack does before it deploys."""
    problems = [problem for size in function_sizes(mesh) if (problem := size.problem())]
    if problems:
        raise MeshConfigError("\n".join(problems))

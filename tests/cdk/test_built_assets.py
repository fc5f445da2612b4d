"""What ships to AWS imports and runs there with only what Lambda or EMR Serverless put beside it.

The layer and the Spark job's dependency archive are really built (`LibraryBundling`, the path `cdk synth`
takes), for x86_64 and this machine's Python so that this machine can import them: on AWS the same
requirements are resolved for the function's Python and architecture. Each check runs in a fresh
interpreter without site-packages whose path holds only:

- Lambda: the layer's `python/`, one function's code folder, and the AWS SDK for Python with the
  packages it brings (what the Lambda runtime provides);
- Spark: the dependency archive, the actor's code folder (`--py-files`), the entry script's folder and
  PySpark (what EMR Serverless provides).

Every handler of both example meshes, the crew, the Spark functions and the gateway is imported, and
the sidecar's telemetry is built with tracing on, as a function with `tracing: true` does at its first
event. A module missing from the built assets fails the test.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from pathlib import Path

import pytest

from asya_cdk.environment import spark_environment
from asya_cdk.layer import PROVIDED_BY_RUNTIME, gateway_bundling, layer_bundling
from asya_cdk.libraries import folder_size
from asya_cdk.loaded_mesh import LoadedMesh
from asya_cdk.loading import load_mesh
from asya_cdk.longest import longest_mesh_names, longest_spark_names
from asya_cdk.packaging import LAMBDA_ZIP_MAX_BYTES
from asya_cdk.sources import package_folder, shipped
from asya_cdk.spark import spark_archive_bundling
from asya_spark.settings import job_environment

ROOT = Path(__file__).resolve().parents[2]
MESHES = [load_mesh(ROOT / "examples" / name / "mesh.yaml") for name in ("catalogue", "reviews")]
PYTHON_VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"
MESH_HANDLERS = [
    *(f"asya_crew.{crew}.lambda_handler" for crew in ("sink", "sump", "pause", "resume")),
    "asya_spark.dispatch.lambda_handler",
    "asya_spark.collect.lambda_handler",
]
GATEWAY_HANDLERS = [f"asya_gateway.{part}.lambda_handler" for part in ("api", "stream", "backstop")]
MESH_CODE = shipped("asya_crew", "asya_spark")  # what asya_cdk.function.mesh_code ships
GATEWAY_CODE = package_folder("asya_gateway")


def _shown(folder: Path) -> str:
    named = {MESH_CODE: "mesh-code", GATEWAY_CODE: "gateway"}
    return named.get(folder) or folder.relative_to(ROOT).as_posix()


pytestmark = pytest.mark.build

LAMBDA_CHECK = """
import os, sys
from asya.handler import load_handler
from asya.telemetry import Telemetry

for spec in sys.argv[1:]:
    load_handler(spec)
telemetry = Telemetry("ns", "actor", tracing=True)
assert telemetry.tracer is not None
assert "botocore" not in {p.split(os.sep)[-1] for p in os.listdir(os.environ["LAYER"])}
print("ok", len(sys.argv) - 1)
"""

SPARK_CHECK = """
import json, os, sys
from asya.batch import BatchHops
from asya.config import SidecarConfig
import asya_spark_job.job, asya_spark_job.styles

for module in ("boto3", "botocore"):
    try:
        __import__(module)
    except ImportError:
        pass
    else:
        raise SystemExit(f"{module} is on the job's path: it must come from nowhere")
hops = BatchHops(SidecarConfig.from_env(json.loads(os.environ["JOB_ENV"])))
print("ok", hops.config.handler)
"""


def _run(check: str, path: list[Path], arguments: list[str], environment: dict[str, str]) -> str:
    """`check` in a new interpreter (`-I -S`: no site-packages, no PYTHONPATH) on exactly `path`."""
    script = f"import sys; sys.path[:0] = {[str(p) for p in path]!r}\n" + textwrap.dedent(check)
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-c", script, *arguments],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": os.environ.get("PATH", ""), **environment},
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def _only(distributions: set[str] | frozenset[str], folder: Path) -> Path:
    """A folder holding links to these installed distributions' top-level modules and nothing else."""
    folder.mkdir()
    for name in distributions:
        distribution = metadata.distribution(name)
        tops = {Path(str(f)).parts[0] for f in distribution.files or [] if not str(f).startswith("..")}
        for top in tops - {"__pycache__"}:
            source = Path(str(distribution.locate_file(top)))
            if source.exists() and not (folder / top).exists() and not top.endswith(".dist-info"):
                (folder / top).symlink_to(source)
    return folder


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The layer and the Spark archive, built as `cdk synth` builds them, and the runtimes' SDK."""
    root = tmp_path_factory.mktemp("built")
    layer = root / "layer"
    gateway = root / "gateway"
    archive = root / "archive"
    archive_bundling = spark_archive_bundling("x86_64", python=PYTHON_VERSION)  # the job's own Python is 3.11 too
    bundlings = {
        layer: layer_bundling("x86_64", PYTHON_VERSION),
        gateway: gateway_bundling("x86_64", PYTHON_VERSION),
        archive: archive_bundling,
    }
    with ThreadPoolExecutor(3) as pool:  # three installs, mostly waiting on the network
        assert all(pool.map(lambda item: item[1].try_bundle(str(item[0]), None), bundlings.items()))
    entry = root / "entry"
    entry.mkdir()
    shutil.copy(package_folder("asya_spark_job") / "entry.py", entry / "entry.py")
    return {
        "layer": layer / "python",
        "gateway": gateway,
        "archive": archive,
        "entry": entry,
        "sdk": _only(PROVIDED_BY_RUNTIME, root / "sdk"),
        "pyspark": _only({"pyspark", "py4j"}, root / "pyspark"),
    }


def test_layer_ships_tracing_and_no_sdk_or_bytecode(built: dict[str, Path]) -> None:
    names = {p.name for p in built["layer"].iterdir()}
    assert {"asya", "aws_lambda_powertools", "aws_xray_sdk", "pydantic", "orjson"} <= names
    assert not names & {"boto3", "botocore", "s3transfer", "urllib3", "dateutil", "six.py", "jmespath"}
    assert not names & {"fastjsonschema", "mcp_types"}, "the gateway's own dependencies ship with its code"
    assert not list(built["layer"].rglob("__pycache__"))


def test_the_gateway_code_brings_its_own_dependencies_and_nothing_the_layer_has(built: dict[str, Path]) -> None:
    names = {p.name for p in built["gateway"].iterdir()}
    assert {"asya_gateway", "fastjsonschema", "mcp_types", "jwt", "cryptography"} <= names
    assert not names & {"pydantic", "pydantic_core", "typing_extensions.py", "asya"}


def test_the_gateway_with_the_layer_stays_well_within_lambdas_size_limit(built: dict[str, Path]) -> None:
    """Its own libraries (sign-in's cryptography the largest) and the layer, unzipped: under a fifth of
    Lambda's 250 MB, so a mesh's programs file and later libraries have room."""
    total = folder_size(built["gateway"]) + folder_size(built["layer"])
    assert total < LAMBDA_ZIP_MAX_BYTES / 5, f"{total:,} bytes"


def _code_folders() -> dict[Path, list[str]]:
    """Each code asset folder of the mesh and the handlers its functions name."""
    folders: dict[Path, list[str]] = {MESH_CODE: MESH_HANDLERS, GATEWAY_CODE: GATEWAY_HANDLERS}
    for mesh in MESHES:
        for name, actor in mesh.config.actors.items():
            if actor.runtime == "lambda":
                folders.setdefault(mesh.code_dir(name), []).append(actor.handler)
    return folders


@pytest.mark.parametrize(
    ("folder", "handlers"), list(_code_folders().items()), ids=[_shown(f) for f in _code_folders()]
)
def test_every_lambda_handler_imports_with_tracing_on(
    built: dict[str, Path], folder: Path, handlers: list[str]
) -> None:
    environment = {"AWS_LAMBDA_FUNCTION_NAME": "asya-ns-actor", "AWS_REGION": "eu-west-1", "LAYER": str(built["layer"])}
    code = built["gateway"] if folder == GATEWAY_CODE else folder  # the gateway's code is built, with its extra
    output = _run(LAMBDA_CHECK, [built["layer"], code, built["sdk"]], handlers, environment)
    assert output.strip() == f"ok {len(handlers)}"


def _spark_actors() -> list[tuple[LoadedMesh, str]]:
    return [(mesh, name) for mesh in MESHES for name, a in mesh.config.actors.items() if a.runtime == "spark"]


@pytest.mark.parametrize(
    ("mesh", "actor"), _spark_actors(), ids=[f"{m.config.namespace}-{a}" for m, a in _spark_actors()]
)
def test_spark_job_builds_its_hops_from_the_archive_alone(built: dict[str, Path], mesh: LoadedMesh, actor: str) -> None:
    path = [built["entry"], mesh.code_dir(actor), built["archive"], built["pyspark"]]
    # what the job runs with: the variables its dispatcher forwards from its own environment
    functions = spark_environment(mesh, actor, longest_mesh_names(mesh.config.namespace), longest_spark_names(actor))
    environment = {"JOB_ENV": json.dumps(job_environment(functions))}
    output = _run(SPARK_CHECK, path, [], environment)
    assert output.strip() == f"ok {mesh.config.actors[actor].handler}"


def _layer_asset_hash(outdir: Path) -> str:
    import aws_cdk as cdk

    from asya_cdk.layer import SidecarLayer

    app = cdk.App(outdir=str(outdir))
    SidecarLayer(cdk.Stack(app, "Layer"), "Sidecar", architecture="x86_64")
    template = app.synth().get_stack_by_name("Layer").template
    (layer,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::Lambda::LayerVersion"]
    return str(layer["Properties"]["Content"]["S3Key"])


def test_the_layer_is_a_new_asset_when_a_dependency_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The layer's dependencies are not in its source folder: hashed by source, a changed pin in the
    installed distribution would leave the deployed layer as it was."""
    from asya_cdk import layer

    declared = layer.layer_requirements

    def one_fewer() -> list[str]:
        return [r for r in declared() if not r.startswith("orjson")]

    first = _layer_asset_hash(tmp_path / "declared")
    assert _layer_asset_hash(tmp_path / "again") == first, "the same dependencies make the same asset"
    monkeypatch.setattr(layer, "layer_requirements", one_fewer)
    assert _layer_asset_hash(tmp_path / "changed") != first


def test_a_spark_actors_libraries_ship_in_its_jobs_archive(tmp_path: Path) -> None:
    from asya_cdk.libraries import Requirements

    own = Requirements(("inflection==0.5.1",), source="actors.crunch.requirements")
    assert spark_archive_bundling("arm64", own).try_bundle(str(tmp_path), None)  # type: ignore[arg-type]
    names = {p.name for p in tmp_path.iterdir()}
    assert {"inflection", "asya", "asya_spark_job", "pydantic"} <= names
    assert not names & {"boto3", "botocore"}, "the job never calls AWS: the SDK stays out unless named"

"""An actor's libraries, installed for Lambda's platform as `cdk synth` installs them: resolved with the
sidecar's, without what the layer or the runtime already has, cached by content, refused when Lambda
would refuse them (no wheel for the platform, over 250 MB), each refusal naming the field.

These reach PyPI (binary wheels for aarch64 and Python 3.14), into a cache of the test's own."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from asya_cdk.layer import PROVIDED_BY_RUNTIME
from asya_cdk.libraries import Distribution, LibrariesError, install
from asya_cdk.loading import load_mesh
from asya_cdk.packaging import FunctionSize, actor_build, function_size, lambda_target, layer_libraries
from asya_local.check import check

pytestmark = pytest.mark.build


@pytest.fixture(autouse=True)
def cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path_factory.getbasetemp() / "asya-cache"  # one for the module: builds are shared
    monkeypatch.setenv("ASYA_CACHE", str(folder))
    return folder


def _mesh(tmp_path: Path, requirements: str) -> Path:
    (tmp_path / "code").mkdir(exist_ok=True)
    (tmp_path / "code" / "mod.py").write_text("def fn(payload):\n    return payload\n")
    path = tmp_path / "mesh.yaml"
    path.write_text(f"namespace: libs\nactors:\n  a: {{handler: mod.fn, code: code, requirements: {requirements}}}\n")
    return path


def test_an_actors_libraries_leave_out_what_the_layer_and_the_runtime_have(tmp_path: Path) -> None:
    target = lambda_target("arm64")
    layer = layer_libraries(target)
    # annotated-types at another version than the layer's: it stays, ahead of the layer's on the path
    mesh = load_mesh(_mesh(tmp_path, "[pyyaml==6.0.3, annotated-types==0.7.0]"))
    build = actor_build(mesh, "a", target, layer)
    assert build is not None
    own = install(build)
    assert set(own.distributions) == {"pyyaml", "annotated-types"}
    assert own.distributions["annotated-types"].version == "0.7.0"
    assert layer.distributions["annotated-types"].version != "0.7.0"
    assert (own.path / "yaml").is_dir()
    assert not (own.path / "pydantic").exists(), "the layer's pydantic, at the layer's version, is not shipped twice"
    assert not set(own.distributions) & PROVIDED_BY_RUNTIME


def test_an_actor_naming_the_sdk_ships_its_own(tmp_path: Path) -> None:
    mesh = load_mesh(_mesh(tmp_path, "[boto3==1.44.5]"))
    target = lambda_target("arm64")
    build = actor_build(mesh, "a", target, layer_libraries(target))
    assert build is not None
    assert {"boto3", "botocore", "s3transfer"} <= set(install(build).distributions), "all of it, or none"


def test_a_library_the_sidecar_needs_at_another_version_is_a_conflict_naming_both(tmp_path: Path) -> None:
    mesh = load_mesh(_mesh(tmp_path, "[typing-extensions==4.15.0]"))
    with pytest.raises(LibrariesError) as raised:
        function_size(mesh, "a")
    said = str(raised.value)
    assert said.startswith("actors.a.requirements: cannot install for Python 3.14 on aarch64-manylinux_2_34")
    assert "typing-extensions==4.15.0" in said
    assert "pydantic==2.14.3" in said


def test_a_build_is_made_once_then_taken_from_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mesh = load_mesh(_mesh(tmp_path, "[pyyaml==6.0.3]"))
    target = lambda_target("arm64")
    build = actor_build(mesh, "a", target, layer_libraries(target))
    assert build is not None
    first = install(build)

    def no_installer(*_args: object, **_kwargs: object) -> subprocess.CompletedProcess[str]:
        raise AssertionError("installed again")

    monkeypatch.setattr(subprocess, "run", no_installer)
    assert install(build) == first


def test_a_library_without_a_wheel_for_lambdas_platform_fails_naming_the_field(tmp_path: Path) -> None:
    mesh = load_mesh(_mesh(tmp_path, "[numpy==1.26.4]"))  # no wheels for CPython 3.14
    with pytest.raises(LibrariesError) as raised:
        function_size(mesh, "a")
    said = str(raised.value)
    assert said.startswith("actors.a.requirements: cannot install for Python 3.14 on aarch64-manylinux_2_34")
    assert "numpy==1.26.4 has no usable wheels" in said


def test_a_function_over_250_mb_is_refused_naming_its_largest_packages_and_the_image_path() -> None:
    size = FunctionSize(
        "embed",
        "zip",
        {"code": 10_000, "libraries": 300_000_000, "sidecar": 12_800_000},
        (Distribution("torch", "2.9.1", 250_000_000), Distribution("numpy", "2.5.5", 50_000_000)),
    )
    problem = size.problem()
    assert problem is not None
    assert problem.startswith("actors.embed: its code, libraries and the sidecar layer unzip to 312.8 MB")
    assert "the largest packages: torch 250.0 MB, numpy 50.0 MB" in problem
    assert "package: image" in problem
    image = FunctionSize("embed", "image", size.parts, size.distributions)
    assert image.problem() is None, "an image may hold 10 GB"


def test_asya_check_refuses_a_set_over_250_mb(tmp_path: Path) -> None:
    console = Console(record=True, width=400)
    code = check(_mesh(tmp_path, "[scikit-learn==1.9.1, pyarrow==26.0.1]"), console)
    said = console.export_text()
    assert code == 1
    assert "actors.a: its code, libraries and the sidecar layer unzip to" in said
    assert "the largest packages: pyarrow" in said
    assert "package: image" in said

"""What the package finds in its installation: the pins it ships, the code it deploys, the CDK CLI it
runs, and what the `asya` command says when the local tools are not installed. The wheel itself, from
an empty folder, is `tests/integration/test_installed_package.py`."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from asya_cdk.sources import SourcesError, package_folder, requirements, shipped
from asya_local.cdk_toolkit import CDK_CLI_VERSION, cdk_arguments
from asya_local.init_cli import InitError, init_project, namespace_for

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_the_pins_come_from_the_installed_distribution_as_pyproject_declares_them() -> None:
    assert requirements() == PROJECT["dependencies"]
    assert requirements("gateway") == PROJECT["optional-dependencies"]["gateway"]
    with pytest.raises(SourcesError, match="no extra 'nope'"):
        requirements("nope")


def test_a_shipped_folder_holds_the_named_packages_and_nothing_else() -> None:
    folder = shipped("asya_crew", "asya_spark")
    assert sorted(child.name for child in folder.iterdir()) == ["asya_crew", "asya_spark"]
    source = package_folder("asya_crew")
    assert sorted(p.name for p in (folder / "asya_crew").glob("*.py")) == sorted(p.name for p in source.glob("*.py"))
    assert shipped("asya_spark", "asya_crew") == folder, "one folder per content, whatever the order asked"


def test_every_folder_of_python_code_is_a_package_the_wheel_ships() -> None:
    """setuptools ships the packages pyproject lists, no others: a new subpackage left out of the list
    installs without a word, and its first import fails only where the wheel is installed."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    found = {
        ".".join((name, *folder.relative_to(ROOT / root).parts))
        for name, root in config["package-dir"].items()
        for folder in [ROOT / root, *(ROOT / root).rglob("*")]
        if folder.is_dir() and "__pycache__" not in folder.parts and any(folder.glob("*.py"))
    }
    assert found - listed == set(), "add them to [tool.setuptools] packages"


def test_the_spark_jobs_entry_and_image_ship_inside_the_package() -> None:
    job = package_folder("asya_spark_job")
    assert "from asya_spark_job.job import main" in (job / "entry.py").read_text()
    assert (job / "image" / "Dockerfile").read_text().startswith("# The Spark job's image")


def test_the_cdk_cli_is_the_version_the_repository_pins() -> None:
    pinned = json.loads((ROOT / "package.json").read_text())["devDependencies"]["aws-cdk"]
    assert pinned == CDK_CLI_VERSION


def test_the_cdk_runs_the_shipped_app_on_the_mesh_file_with_the_users_arguments(tmp_path: Path) -> None:
    arguments = cdk_arguments("deploy", tmp_path / "mesh.yaml", ["--require-approval", "never"])
    assert arguments[:2] == ["deploy", "--app"]
    assert arguments[2].endswith(" -m asya_cdk.app")
    assert sys.executable in arguments[2]
    assert arguments[3:] == ["-c", f"mesh={tmp_path / 'mesh.yaml'}", "--require-approval", "never"]


@pytest.mark.parametrize(
    ("folder", "namespace"),
    [("word-counter", "word-counter"), ("My Shop_2", "my-shop-2"), ("__", "mesh"), ("a" * 30, "a" * 20)],
)
def test_a_namespace_is_made_of_the_folders_name(folder: str, namespace: str) -> None:
    assert namespace_for(folder) == namespace


def test_init_never_overwrites_and_writes_nothing_when_it_refuses(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("ours")
    with pytest.raises(InitError, match=r"already has README\.md: asya init never overwrites"):
        init_project(tmp_path, "shop")
    assert [p.name for p in tmp_path.iterdir()] == ["README.md"]
    assert (tmp_path / "README.md").read_text() == "ours"


def test_init_writes_a_project_whose_mesh_file_loads(tmp_path: Path) -> None:
    from asya_cdk.loading import load_mesh

    written = init_project(tmp_path / "shop", "shop", cdk=True)
    assert {"mesh.yaml", "mesh.schema.json", "cdk.json", "app.py", ".gitignore"} <= set(written)
    text = (tmp_path / "shop" / "mesh.yaml").read_text()
    assert text.startswith("# yaml-language-server: $schema=./mesh.schema.json\n"), "an editor finds the schema"
    mesh = load_mesh(tmp_path / "shop" / "mesh.yaml")
    assert mesh.config.version == 1
    assert mesh.config.namespace == "shop"
    assert mesh.config.flows["count-words"].route == ["normalize", "count"]
    assert ".asya/" in (tmp_path / "shop" / ".gitignore").read_text().splitlines()
    assert '"asya-aws[local]==' in (tmp_path / "shop" / "pyproject.toml").read_text()


def test_without_the_local_tools_the_command_says_which_extra_brings_them(tmp_path: Path) -> None:
    """A module the command imports is missing, as in `pip install asya-aws` alone: one line, exit 2."""
    blocker = tmp_path / "rich"
    blocker.mkdir()
    (blocker / "__init__.py").write_text("raise ModuleNotFoundError('No module named rich', name='rich')\n")
    code = "import sys; from asya_local.command import main; sys.exit(main(['check']))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, env=_with_path(tmp_path)
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "asya: the command needs the local tools (rich is missing): pip install 'asya-aws[local]'"
    )
    version = subprocess.run(
        [sys.executable, "-c", "from asya_local.command import main; main(['--version'])"],
        capture_output=True,
        text=True,
        check=False,
        env=_with_path(tmp_path),
    )
    assert version.stdout.startswith("asya ")


def _with_path(first: Path) -> dict[str, str]:
    import os

    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(first), str(ROOT)])}

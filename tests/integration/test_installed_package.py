"""The package as a user installs it: a wheel built from this checkout, installed with its `local` extra
into a fresh virtualenv, used from an empty folder elsewhere with no checkout in reach.

What a new team does on its first day, in order: `asya init`, `asya check`, `asya synth` (the pinned
CDK CLI, installed into the cache on first use), `asya up` with a task sent through the gateway and
ended, and the scaffold's own tests (through the package's pytest plugin, one of them on the `asya
up` running). The virtualenv is made by uv (a dependency of the local tools) from its
cache, so after the first run it takes seconds; nothing of this checkout is on the path: the commands
run with the new environment's interpreter, from a temporary folder, without PYTHONPATH.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.build, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
UV = Path(sys.executable).parent / "uv"
STARTED_WITHIN = 180.0  # seconds for `asya up` to write its state file
RELEASE = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The `bin/` of a fresh virtualenv holding the wheel of this checkout with its `local` extra, and
    pytest (what the scaffold's `test` extra brings)."""
    work = tmp_path_factory.mktemp("package")
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(work), str(ROOT)], work)
    assert built.returncode == 0, built.stderr[-2000:]
    shutil.rmtree(ROOT / "build", ignore_errors=True)  # setuptools' staging folder, left in the checkout
    [wheel] = work.glob("asya_aws-*.whl")
    venv = work / "venv"
    assert _run([str(UV), "venv", "--quiet", "--python", sys.executable, str(venv)], work).returncode == 0
    environment = {**_clean_environment(venv / "bin"), "VIRTUAL_ENV": str(venv)}
    install = [str(UV), "pip", "install", "--quiet", f"{wheel}[local]", "pytest"]
    done = subprocess.run(install, cwd=work, env=environment, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return venv / "bin"


@pytest.fixture(scope="module")
def project(installed: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project made by `asya init` in an empty folder."""
    home = tmp_path_factory.mktemp("team")
    done = _asya(installed, home, "init", "word-counter")
    assert done.returncode == 0, done.stdout + done.stderr
    return home / "word-counter"


def test_what_runs_is_the_installed_package_not_this_checkout(installed: Path, project: Path) -> None:
    code = "import asya, asya_cdk, asya_local; print(asya.__file__, asya_cdk.__file__, asya_local.__file__)"
    done = _run([str(installed / "python"), "-c", code], project, installed)
    assert done.returncode == 0, done.stderr
    assert all(path.startswith(str(installed.parent)) for path in done.stdout.split()), done.stdout


def test_the_installed_release_is_the_one_every_name_reports(installed: Path, project: Path) -> None:
    """`asya --version` and `asya.__version__` read the wheel's own metadata: the pyproject's version."""
    assert _asya(installed, project, "--version").stdout.strip() == f"asya {RELEASE}"
    code = "import asya; print(asya.__version__, asya.secret.__module__)"
    done = _run([str(installed / "python"), "-c", code], project, installed)
    assert done.stdout.split() == [RELEASE, "asya.startup"], done.stderr


def test_asya_init_writes_a_project_and_never_overwrites_it(installed: Path, project: Path) -> None:
    assert {path.relative_to(project).as_posix() for path in project.rglob("*") if path.is_file()} == {
        ".gitignore",
        "README.md",
        "actors/text.py",
        "mesh.schema.json",
        "mesh.yaml",
        "pyproject.toml",
        "tests/test_actors.py",
        "tests/test_flow.py",
        "tests/test_on_local_stack.py",
    }
    assert "namespace: word-counter " in (project / "mesh.yaml").read_text()
    again = _asya(installed, project.parent, "init", "word-counter")
    assert again.returncode == 2
    assert "never overwrites" in again.stdout + again.stderr


def test_asya_check_and_synth_from_the_users_folder(installed: Path, project: Path) -> None:
    checked = _asya(installed, project, "check")
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-2000:]
    synth = _asya(installed, project, "synth", "--", "--quiet")
    assert synth.returncode == 0, synth.stdout[-3000:] + synth.stderr[-3000:]
    template = json.loads((project / "cdk.out" / "asya-word-counter.template.json").read_text())
    functions = {
        resource["Properties"].get("FunctionName")
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::Lambda::Function"
    }
    assert {"asya-word-counter-normalize", "asya-word-counter-count", "asya-word-counter-x-sink"} <= functions
    assert template["Outputs"]["AsyaVersion"]["Value"] == RELEASE


@pytest.fixture(scope="module")
def running(installed: Path, project: Path) -> Iterator[None]:
    """`asya up` in the project's folder, for the tests below."""
    with _Running(installed, project):
        yield


def test_asya_up_runs_a_task_end_to_end(installed: Path, project: Path, running: None) -> None:
    sent = _asya(installed, project, "send", '{"text": "Hello, hello world"}', "--flow", "count-words", "--wait", "60")
    assert sent.returncode == 0, sent.stdout[-3000:] + sent.stderr[-2000:]
    assert "succeeded" in sent.stdout
    assert '"hello": 2' in sent.stdout


def test_the_scaffolds_own_tests_pass_with_the_packages_pytest_plugin(
    installed: Path, project: Path, running: None
) -> None:
    """Each handler alone, the flow in one process (`asya_mesh`) and on the local stack (`asya_stack`,
    which finds the `asya up` running in the folder and uses it): the fixtures come from the plugin the
    package registers, found by pytest with nothing configured."""
    log = project / ".asya" / "word-counter.log"
    counted_before = log.read_text().count("count | 1 in, 1 done")
    done = _run([str(installed / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider"], project, installed)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "7 passed" in done.stdout
    assert log.read_text().count("count | 1 in, 1 done") > counted_before, "the stack test ran on the asya up"


class _Running:
    """`asya up` in the background until the block ends (SIGINT, as Ctrl-C)."""

    def __init__(self, installed: Path, project: Path) -> None:
        self.command = [str(installed / "asya"), "up", "--port", "0"]
        self.project = project
        self.environment = _clean_environment(installed)
        self.process: subprocess.Popen[str] | None = None

    def __enter__(self) -> _Running:
        self.process = subprocess.Popen(
            self.command,
            cwd=self.project,
            env=self.environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        state = self.project / ".asya" / "local.json"
        deadline = time.monotonic() + STARTED_WITHIN
        while not state.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                output = self.process.stdout.read() if self.process.stdout else ""
                self._stop()
                pytest.fail(f"asya up did not start: {output[-3000:]}")
            time.sleep(0.5)
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop()

    def _stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _asya(installed: Path, cwd: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return _run([str(installed / "asya"), *arguments], cwd, installed)


def _run(command: list[str], cwd: Path, installed: Path | None = None) -> subprocess.CompletedProcess[str]:
    environment = _clean_environment(installed) if installed is not None else dict(os.environ)
    return subprocess.run(command, cwd=cwd, env=environment, capture_output=True, text=True, timeout=600, check=False)


def _clean_environment(installed: Path | None) -> dict[str, str]:
    """This process's environment without what points Python at the checkout or its virtualenv."""
    dropped = {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "PYTHONSTARTUP"}
    environment = {key: value for key, value in os.environ.items() if key not in dropped}
    if installed is not None:
        path = [entry for entry in environment.get("PATH", "").split(os.pathsep) if not entry.startswith(str(ROOT))]
        environment["PATH"] = os.pathsep.join([str(installed), *path])
    return environment

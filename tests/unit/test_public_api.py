"""The public API as a user's code meets it (docs/public-api.md): each name imported in a fresh
interpreter, as a handler, a test or a CDK app of a user's does; `import asya` light enough for every
cold start, and an actor's init and the gateway's import without what a plain hop or a REST request
never uses (docs/performance.md, "Cold start"), nor `asya status` without what only `asya up` and
`asya deploy` use; the page's tables read here, so that the page, docs/actors.md and the package
cannot drift apart."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from packaging.version import Version

import asya
import asya_cdk
import asya_gateway
import asya_local
from asya.names import DISTRIBUTION

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
# What an actor's init needs to build its sidecar (`asya.actor`), with no AWS call: a handler of the
# standard library, and a region for the clients it makes.
ACTOR_ENVIRONMENT = {
    "ASYA_NAMESPACE": "public",
    "ASYA_ACTOR_NAME": "echo",
    "ASYA_HANDLER": "json.dumps",
    "AWS_DEFAULT_REGION": "eu-west-1",
}
# Resolves each dotted name as `import` and attribute access do in a user's code: the longest module
# prefix imported, the rest looked up on it; prints the names that did not resolve, with why.
RESOLVE = """
import importlib, json, sys
missing = {}
for name in json.loads(sys.argv[1]):
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        try:
            for part in parts[cut:]:
                found = getattr(found, part)
        except AttributeError as exc:
            missing[name] = str(exc)
        break
    else:
        missing[name] = "no module"
print(json.dumps(missing))
"""


def _python(code: str, *arguments: str, **environment: str) -> subprocess.CompletedProcess[str]:
    """`code` in a fresh interpreter that finds the packages where this process found them (the
    checkout's folders, or the installed distribution), and nothing it has already imported."""
    folders = {str(Path(package.__file__ or "").parents[1]) for package in (asya, asya_cdk, asya_gateway, asya_local)}
    env = {**os.environ, **environment, "PYTHONPATH": os.pathsep.join(sorted(folders))}
    return subprocess.run(
        [sys.executable, "-c", code, *arguments], capture_output=True, text=True, check=False, env=env, cwd=ROOT
    )


def _section(page: Path, heading: str) -> str:
    """The text under `heading` up to the next heading of its level or above."""
    text = page.read_text()
    level = heading.split(" ", 1)[0]
    start = text.index(f"\n{heading}\n")
    ends = [m.start() for m in re.finditer(rf"\n#{{1,{len(level)}}} ", text) if m.start() > start]
    return text[start : min(ends, default=len(text))]


def _first_column(section: str) -> list[str]:
    """The backticked items of each table row's first cell (the header and its rule left out)."""
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return [item for row in rows for item in re.findall(r"`([^`]+)`", row.split("|")[1])]


PUBLIC_NAMES = _first_column(_section(DOCS / "public-api.md", "### Python names"))
COMMANDS = {item.split()[1] for item in _first_column(_section(DOCS / "public-api.md", "### The `asya` commands"))}


def test_the_page_lists_the_names_a_handler_imports() -> None:
    assert {"asya.secret", "asya.metrics", "asya.AbiError", "asya.SecretError", "asya_cdk.AsyaMesh"} <= set(
        PUBLIC_NAMES
    )
    assert {"init", "synth", "deploy", "destroy"} <= COMMANDS


def test_every_public_name_of_the_page_resolves_in_a_fresh_interpreter() -> None:
    done = _python(RESOLVE, json.dumps(PUBLIC_NAMES), **ACTOR_ENVIRONMENT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == {}


def test_import_asya_loads_neither_boto3_nor_the_sidecars_libraries() -> None:
    """Every actor's cold start imports `asya`: its public names load when first used, not before."""
    heavy = ("boto3", "botocore", "pydantic", "aws_lambda_powertools", "orjson")
    probe = f"import sys, asya; print(json.dumps([m for m in {heavy!r} if m in sys.modules]))"
    done = _python(f"import json; {probe}")
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == []


@pytest.mark.parametrize(
    ("entry", "later"),
    [
        pytest.param(
            "import asya.actor",  # its init: the sidecar built, with an idempotency table and a tasks table
            ["asya.gathering", "asya.join_table", "asya.admission", "aws_lambda_powertools.utilities.idempotency"],
            id="actor",
        ),
        pytest.param("import asya_gateway.api", ["mcp_types", "asya_gateway.mcp", "asya_gateway.a2a"], id="gateway"),
        pytest.param(
            "from asya_local.cli import main; main(['status', 'nope'])",  # no stack runs: one line, exit 2
            ["aws_cdk", "jsii", "moto", "flask", "jinja2"],
            id="asya-status",
        ),
    ],
)
def test_a_cold_start_leaves_for_later_what_most_requests_never_use(
    entry: str, later: list[str], tmp_path: Path
) -> None:
    """A join's gathering, an outside envelope's admission, the idempotency table's client (a tracked hop
    is claimed in its task record), the MCP and A2A doors: each loads at the first request needing it.
    An `asya` command that asks the gateway starts without the CDK, moto, Flask and Jinja, which load
    only for the commands that start, deploy or draw a mesh (docs/performance.md, "The CLI's start")."""
    probe = f"import json, sys; {entry}; print(json.dumps([m for m in {later!r} if m in sys.modules]))"
    no_stack = str(tmp_path / "local.json")
    done = _python(
        probe, **ACTOR_ENVIRONMENT, ASYA_IDEMPOTENCY_TABLE="hops", ASYA_TASKS_TABLE="tasks", ASYA_LOCAL_STATE=no_stack
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1]) == []


def test_import_asya_then_its_names_as_a_handler_uses_them() -> None:
    """`import asya; asya.secret(...)` as docs/actors.md shows it, and every name of `asya.__all__`,
    `dir(asya)` and `from asya import *` agreeing."""
    code = """
import json, asya
from asya.startup import secret
assert asya.secret is secret
resolved = {name: type(getattr(asya, name)).__name__ for name in asya.__all__}
assert set(asya.__all__) <= set(dir(asya))
namespace = {}
exec("from asya import *", namespace)
assert set(asya.__all__) <= set(namespace)
try:
    asya.secret("WEBHOOK_KEY")
except KeyError as exc:
    refused = str(exc)
print(json.dumps({"resolved": resolved, "refused": refused}))
"""
    done = _python(code)
    assert done.returncode == 0, done.stderr[-2000:]
    answer = json.loads(done.stdout)
    assert set(answer["resolved"]) == set(asya.__all__)
    assert "WEBHOOK_KEY is not one of this actor's secrets" in answer["refused"]


def test_asya_has_no_name_the_page_does_not_list() -> None:
    """What `asya.__all__` offers is public, so the page lists it (and a name added to one is added to
    the other)."""
    assert {f"asya.{name}" for name in asya.__all__} <= set(PUBLIC_NAMES)
    assert {f"asya_cdk.{name}" for name in asya_cdk.__all__} <= set(PUBLIC_NAMES)


def test_an_unknown_name_of_asya_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="module 'asya' has no attribute 'secrets'"):
        asya.secrets  # noqa: B018 - the look-up is the point


def test_every_asya_name_docs_actors_tells_a_handler_to_use_is_public() -> None:
    """docs/actors.md names `asya.…` only as the page lists them: a public name, the module one lives in
    (`asya.actor`), or something of one (`asya.metrics.add_metric`)."""
    mentioned = set(re.findall(r"\basya(?:\.[A-Za-z_]\w*)+", (DOCS / "actors.md").read_text()))
    assert mentioned
    public = set(PUBLIC_NAMES)

    def listed(name: str) -> bool:
        return any(p == name or p.startswith(f"{name}.") or name.startswith(f"{p}.") for p in public)

    assert {name for name in mentioned if not listed(name)} == set()


def test_every_command_of_asya_is_on_the_page() -> None:
    from asya_local.cli import parser

    [subcommands] = [action for action in parser()._actions if action.dest == "command"]
    assert set(subcommands.choices or {}) <= COMMANDS


def test_asya_version_prints_the_installed_distributions_version() -> None:
    """`asya --version`, `asya.__version__` and the distribution's metadata say the same release."""
    done = _python("from asya_local.command import main; main(['--version'])")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == f"asya {version(DISTRIBUTION)}"
    assert asya.__version__ == version(DISTRIBUTION)


def test_asya_version_as_a_module_loads_no_command() -> None:
    """`python -m asya_local.cli --version` (as docs/performance.md times it) prints the version having
    loaded none of the commands nor the libraries they print and ask with: it answers in a tenth of a
    second, not the half second every command's parser takes."""
    code = """
import json, runpy, sys
sys.argv[1:] = ["--version"]
try:
    runpy.run_module("asya_local.cli", run_name="__main__")
except SystemExit as done:
    heavy = ("asya_local.commands", "asya_local.task_cli", "rich", "httpx2", "botocore", "pydantic")
    print(json.dumps({"code": done.code, "loaded": [m for m in heavy if m in sys.modules]}))
"""
    done = _python(code)
    assert done.returncode == 0, done.stderr[-2000:]
    version_line, probe = done.stdout.splitlines()
    assert version_line == f"asya {version(DISTRIBUTION)}"
    assert json.loads(probe) == {"code": 0, "loaded": []}


def test_without_an_installed_distribution_the_version_is_unknown_and_still_a_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As in the Lambda layer, which holds the packages and not their metadata."""
    import importlib.metadata

    def absent(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", absent)
    assert asya._installed_version() == asya.UNKNOWN_VERSION
    assert Version(asya.UNKNOWN_VERSION) < Version("0.0.1")

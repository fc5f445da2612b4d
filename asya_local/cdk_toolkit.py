"""The AWS CDK CLI, pinned, and the mesh's CDK app as it runs from a user's project folder.

The CDK app ships inside the package (`python -m asya_cdk.app`), so a project needs neither a
`cdk.json` nor an `app.py` of its own: the CLI is told the app's command line and the mesh file, and
writes `cdk.out/` in the folder it runs in. The CLI is the npm package `aws-cdk` at the version below
(a 2.x release: the `latest` tag is an incompatible 3.x); it is installed once per version into the
cache (`<cache>/cdk-cli/<version>`, the cache of `asya_cdk.libraries`), with the machine's npm, so no
global install is needed and two projects share it. Node.js itself must be on the machine: the CDK
runs on it.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from asya_cdk.libraries import cache_root, cached_folder

CDK_CLI_VERSION = "2.1148.1"  # the same as package.json's, which the repository's own `npx cdk` uses
# the jsii kernel's banner on Node releases past its support date, and the CLI's version notices (a network call)
QUIET = {"JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20", "CDK_DISABLE_VERSION_CHECK": "1"}


class ToolkitError(RuntimeError):
    """The CDK CLI could not be found or installed: the message says what the machine lacks."""


def cdk_cli(announce: Callable[[str], None] = lambda _line: None) -> Path:
    """The pinned CDK CLI's executable, installed into the cache on first use (`announce` is told)."""
    folder = cache_root() / "cdk-cli" / CDK_CLI_VERSION
    if not folder.exists():
        npm = shutil.which("npm")
        if npm is None or shutil.which("node") is None:
            raise ToolkitError("the AWS CDK needs Node.js 20 or newer with npm on the PATH: install it, then run again")
        announce(f"installing the AWS CDK CLI {CDK_CLI_VERSION} into {folder} (once)")
        cached_folder(folder, lambda staging: _npm_install(npm, staging))
    return folder / "node_modules" / ".bin" / "cdk"


def _npm_install(npm: str, staging: Path) -> None:
    staging.mkdir(parents=True)
    command = [npm, "install", "--prefix", str(staging), "--no-audit", "--no-fund", "--loglevel=error"]
    done = subprocess.run([*command, f"aws-cdk@{CDK_CLI_VERSION}"], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ToolkitError(f"npm could not install aws-cdk@{CDK_CLI_VERSION}: {done.stderr.strip()[-400:]}")


def app_command() -> str:
    """The command line the CDK CLI runs the mesh's app with: this interpreter, so the app sees the
    same installation of the package as the `asya` command that started it."""
    return f"{shlex.quote(sys.executable)} -m asya_cdk.app"


def cdk_arguments(verb: str, config: Path, extra: list[str]) -> list[str]:
    """`cdk <verb>` of the mesh file `config`, with the user's own arguments after it."""
    return [verb, "--app", app_command(), "-c", f"mesh={config.resolve()}", *extra]


def cdk_environment() -> dict[str, str]:
    """The user's environment (their credentials, profile and region) with the notices off and
    BuildKit's default attestations off, so a `package: image` actor's image is pushed as the single
    manifest Lambda takes (`asya_cdk.packaging.NO_ATTESTATIONS`; imported here, as it loads aws_cdk, which
    the `asya` commands that only import `ToolkitError` do without)."""
    from asya_cdk.packaging import NO_ATTESTATIONS

    return {**os.environ, **QUIET, NO_ATTESTATIONS: "1"}


def run_cdk(cli: Path, arguments: list[str], cwd: Path) -> int:
    """The CLI in `cwd` (where `cdk.out/` is written), in `cdk_environment()`."""
    return subprocess.call([str(cli), *arguments], cwd=cwd, env=cdk_environment())

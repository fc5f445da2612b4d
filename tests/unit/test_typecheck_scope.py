"""mypy skips the modules of aws_cdk that no code here imports (pyproject.toml: a cold run took 70 s,
two thirds of it in services no mesh makes). A skipped module is Any to mypy without a word, so a new
import of one would go unchecked: every aws_cdk module the code imports must be in the checked list."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHECKED_FOLDERS = ("cdk", "asya_local", "tests", "bench", "examples", "sidecar_layer", "lambdas", "gateway_api")


def _checked_modules() -> set[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["overrides"]
    return {
        module for override in config if override.get("follow_imports") == "normal" for module in override["module"]
    }


def _imported_cdk_modules(source: str) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] == "aws_cdk"}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "aws_cdk":
            found.add(node.module)
            if node.module == "aws_cdk":  # `from aws_cdk import aws_sqs`: a module, or a name of the core
                found |= {f"aws_cdk.{alias.name}" for alias in node.names if alias.name.islower()}
    return found


def test_every_aws_cdk_module_the_code_imports_is_type_checked() -> None:
    imported = {
        module
        for folder in CHECKED_FOLDERS
        for path in (ROOT / folder).rglob("*.py")
        if "cdk.out" not in path.parts
        for module in _imported_cdk_modules(path.read_text())
    }
    assert "aws_cdk.aws_lambda" in imported, "the scan finds the CDK's imports"
    unchecked = imported - _checked_modules()
    assert not unchecked, f"add to pyproject.toml's checked aws_cdk modules: {sorted(unchecked)}"


def test_a_module_imported_from_the_package_counts() -> None:
    assert _imported_cdk_modules("from aws_cdk import aws_sns as sns, Duration\nimport aws_cdk.aws_kms") == {
        "aws_cdk",
        "aws_cdk.aws_sns",
        "aws_cdk.aws_kms",
    }

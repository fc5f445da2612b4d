"""The example mesh synthesized once for every template test that reads it (`tests.support.reviews_template`):
as it is, and with every gateway setting changed. A test module's own `synthesized` takes its place."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from aws_cdk.assertions import Template

from asya_cdk.config import MeshConfig
from asya_cdk.loaded_mesh import LoadedMesh
from asya_cdk.loading import load_mesh
from tests.support.reviews_template import EXAMPLE
from tests.support.templates import synthesize


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> tuple[Template, dict[str, Any], Path]:
    return synthesize(load_mesh(EXAMPLE), tmp_path_factory.mktemp("cdk.out"))


@pytest.fixture(scope="session")
def with_api_keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[Template, dict[str, Any], Path]:
    """The example mesh with every gateway setting changed and every status point written."""
    document = yaml.safe_load(EXAMPLE.read_text())
    document["gateway"] = {
        "auth": "api_key",
        "task_ttl_days": 2,
        "backstop_minutes": 5,
        "tracing": True,
        "cloudwatch_role": False,
        "ownership": "session",
        "a2a": {"public_card": "off"},
    }
    document["gateway"]["system_log_level"] = "INFO"
    document["status"] = {"writes": "every-point"}
    document["actors"]["score"]["tracing"] = True
    document["actors"]["score"]["system_log_level"] = "DEBUG"
    mesh = LoadedMesh(config=MeshConfig.model_validate(document), base=EXAMPLE.parent)
    return synthesize(mesh, tmp_path_factory.mktemp("cdk.out"))

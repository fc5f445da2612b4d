"""The local endpoint's patches of moto are all listed in `asya_local.endpoint.patches`, each with a
test that exists, for the moto installed: a moto upgrade fails here first, pointing at `make
conformance` (the endpoint with its fidelity patches alone) and at each patch's proof."""

from __future__ import annotations

import importlib
from importlib.metadata import version
from pathlib import Path

import pytest

from asya_local.endpoint import patches
from asya_local.endpoint.patches import MOTO_VERSION, PATCHES, Patch, Purpose
from asya_local.endpoint.process import endpoint_admin

ROOT = Path(__file__).resolve().parents[2]
ENDPOINT = ROOT / "asya_local" / "endpoint"


def test_every_patch_module_is_listed_with_a_proof_that_exists() -> None:
    modules = {path.stem for path in ENDPOINT.glob("moto_*.py")}
    assert {patch.module for patch in PATCHES} == modules
    for patch in PATCHES:
        assert callable(getattr(importlib.import_module(f"asya_local.endpoint.{patch.module}"), patch.function))
        assert (ROOT / patch.proof).is_file(), patch


def test_the_endpoint_runs_with_every_patch_and_tells_each_one(patched_endpoint: str) -> None:
    """Each patch is found applied by the moto attribute it names (`Patch.replaces`), in the endpoint's
    process, which applies them all (this one is started with the speed ones); in the tests' process,
    where none is applied, tests/conftest.py checks that none is found."""
    assert sorted(endpoint_admin(patched_endpoint, "patches")) == sorted(patch.function for patch in PATCHES)


def test_the_patches_were_written_for_the_moto_installed() -> None:
    assert version("moto") == MOTO_VERSION, (
        f"moto {version('moto')} is installed, the patches were written for {MOTO_VERSION}: run `make "
        "conformance`, then each patch's proof, before changing MOTO_VERSION"
    )


def test_the_speed_switch_leaves_the_speed_patches_out(monkeypatch: pytest.MonkeyPatch) -> None:
    applied: list[str] = []
    monkeypatch.setattr(Patch, "apply", lambda self: applied.append(self.function))
    fidelity = patches.apply_patches(speed=False)
    assert applied == [patch.function for patch in fidelity]
    assert {patch.purpose for patch in fidelity} == {Purpose.FIDELITY}
    assert "apply_emr_fix" not in applied  # the Spark runner applies it, with itself
    everything = patches.apply_patches(speed=True)
    assert {patch.purpose for patch in everything} == {Purpose.FIDELITY, Purpose.SPEED}

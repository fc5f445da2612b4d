"""A local execution environment's init, as Lambda's Python runtime does it: the handler's module is
imported in a process that has only the function's own path, and a failure is reported with the
runtime's error type and message, and shown on screen from the worker log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from asya_cdk.layer import layer_build
from asya_cdk.libraries import Target, install
from asya_cdk.sources import shipped
from asya_local import worklog
from asya_local.functions import worker
from asya_local.runtime import runtime_interface, runtime_sdk_build


def _spec(handler: str) -> dict[str, str]:
    return {"handler": handler, "function": "asya-ns-a"}


def test_a_module_that_is_not_shipped_is_runtime_import_module_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "needs_missing.py").write_text("import a_library_nobody_shipped\n\ndef fn(p):\n    return p\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(worker.InitError) as raised:
        worker.handler_module(_spec("needs_missing.fn"))
    assert raised.value.record == {
        "errorMessage": "Unable to import module 'needs_missing': No module named 'a_library_nobody_shipped'",
        "errorType": "Runtime.ImportModuleError",
        "requestId": "",
        "stackTrace": [],
    }


def test_syntax_errors_missing_handlers_and_other_failures_get_the_runtimes_types(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "broken_syntax.py").write_text("def fn(:\n")
    (tmp_path / "raising.py").write_text("raise ValueError('no model here')\n")
    (tmp_path / "fine.py").write_text("def fn(p):\n    return p\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    expected = {
        "broken_syntax.fn": ("Runtime.UserCodeSyntaxError", "Syntax error in module 'broken_syntax': "),
        "raising.fn": ("ValueError", "no model here"),
        "fine.other": ("Runtime.HandlerNotFound", "Handler 'other' missing on module 'fine'"),
    }
    for handler, (error_type, message) in expected.items():
        with pytest.raises(worker.InitError) as raised:
            worker.handler_module(_spec(handler))
        assert raised.value.record["errorType"] == error_type
        assert raised.value.record["errorMessage"].startswith(message)


def test_an_actor_whose_module_cannot_be_imported_starts_and_says_so_at_error(tmp_path: Path) -> None:
    """`asya.actor` in a process without site-packages, on a function's path (its code, the layer, the
    runtime's SDK), as the local stack starts it: the actor's module imports PyYAML, which the function
    does not ship. The environment starts (each envelope then fails with the error, `asya.handler`),
    and its first record says why at ERROR, the line `asya up` shows."""
    (tmp_path / "uses_yaml.py").write_text("import yaml\n\ndef fn(p):\n    return p\n")
    spec = {
        "function": "asya-ns-a",
        "handler": "asya.actor.lambda_handler",
        "environment": {"ASYA_NAMESPACE": "ns", "ASYA_ACTOR_NAME": "a", "ASYA_HANDLER": "uses_yaml.fn"},
        "timeout": 3,
        "memory": 128,
        "interval": 60,
    }
    target = Target.this_machine()
    layer, sdk = install(layer_build(target)).path, install(runtime_sdk_build(target)).path
    path = os.pathsep.join(str(p) for p in (tmp_path, shipped("asya"), layer, sdk, runtime_interface()))
    started = subprocess.Popen(
        [sys.executable, "-S", "-m", "asya_local.functions.scheduler", json.dumps(spec)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env={"PATH": os.environ["PATH"], "PYTHONPATH": path},
    )
    assert started.stdout is not None
    try:
        first = started.stdout.readline()
    finally:
        started.terminate()
        started.wait(timeout=30)
    record = json.loads(first)
    assert record["level"] == "ERROR"
    assert record["error_type"] == "HandlerImportError"
    assert worklog.is_error(first)
    assert worklog.shown(first).startswith(
        "a cannot load its handler: importing 'uses_yaml' failed: No module named 'yaml'; each envelope fails"
    )

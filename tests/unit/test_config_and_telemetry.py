"""Configuration errors name the variable; metrics and logs come out as Powertools writes them."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from typing import Any

import pytest

from asya.config import SidecarConfig
from asya.telemetry import Telemetry
from asya.variables import ConfigError
from tests.support.mesh import Mesh, envelope

REQUIRED = {"ASYA_NAMESPACE": "ns", "ASYA_ACTOR_NAME": "a", "ASYA_HANDLER": "m.f"}


def test_three_variables_are_enough() -> None:
    config = SidecarConfig.from_env(REQUIRED)
    assert config.queue_name("x-sink") == "asya-ns-x-sink"
    assert config.idempotency_table is None
    assert config.actor_timeout is None


@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        ({"ASYA_NAMESPACE": ""}, "ASYA_NAMESPACE is required"),
        ({"ASYA_HANDLER": "  "}, "ASYA_HANDLER is required"),
        ({"ASYA_ACTOR_NAME": "a b"}, "ASYA_ACTOR_NAME='a b' may only contain"),
        ({"ASYA_ACTOR_NAME": "a" * 80}, "longer than SQS's 80 characters"),
        ({"ASYA_HANDLER_MODE": "raw"}, "ASYA_HANDLER_MODE must be 'payload' or 'envelope'"),
        ({"ASYA_ACTOR_TIMEOUT_SECONDS": "soon"}, "ASYA_ACTOR_TIMEOUT_SECONDS='soon' is not a number"),
        ({"ASYA_ACTOR_TIMEOUT_SECONDS": "0"}, "must be at least"),
        ({"ASYA_MAX_MESSAGE_BYTES": "10"}, "ASYA_MAX_MESSAGE_BYTES='10' must be at least 1024"),
        ({"ASYA_TRACING": "maybe"}, "ASYA_TRACING='maybe' must be true or false"),
    ],
)
def test_bad_configuration_names_the_variable(changes: dict[str, str], fragment: str) -> None:
    with pytest.raises(ConfigError) as caught:
        SidecarConfig.from_env({**REQUIRED, **changes})
    assert fragment in str(caught.value)


def _emf(output: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in output.splitlines() if line.startswith('{"_aws"')]


def test_metrics_are_emitted_in_emf_with_outcomes(mesh: Mesh, capsys: pytest.CaptureFixture[str]) -> None:
    mesh.actor("enrich")
    capsys.readouterr()
    mesh.deliver(envelope(), envelope(id="bad", curr="zzz"))
    blobs = _emf(capsys.readouterr().out)
    processed = {b["outcome"]: b["MessagesProcessed"] for b in blobs if "MessagesProcessed" in b}
    assert processed == {"forwarded": [1.0], "sumped": [1.0]}
    failed = [b for b in blobs if "MessagesFailed" in b]
    assert failed[0]["reason"] == "RouteMismatch"
    sent = {b["destination"]: b["MessagesSent"] for b in blobs if "MessagesSent" in b}
    assert sent == {"actor": [1.0], "sump": [1.0]}
    totals = next(b for b in blobs if "MessagesReceived" in b)
    assert totals["MessagesReceived"] == [2.0]
    assert totals["mesh"] == "unit"
    assert totals["actor"] == "a"
    assert len(totals["HandlerDuration"]) == 1  # type: ignore[arg-type]
    for name in ("HandlerDuration", "ProcessingDuration"):
        for value in totals[name]:  # type: ignore[attr-defined]
            assert value == round(value, 3), f"{name} is kept to the microsecond: {value}"


def test_handlers_can_record_custom_metrics(mesh: Mesh, capsys: pytest.CaptureFixture[str]) -> None:
    mesh.actor("records_metric")
    capsys.readouterr()
    mesh.deliver(envelope())
    blob = next(b for b in _emf(capsys.readouterr().out) if "TokensGenerated" in b)
    assert blob["TokensGenerated"] == [42.0]
    assert blob["actor"] == "a"


def test_logs_carry_the_envelope_id_as_correlation_id(mesh: Mesh, capsys: pytest.CaptureFixture[str]) -> None:
    sidecar = mesh.actor("explode")
    handler = sidecar.telemetry.logger.registered_handler
    assert isinstance(handler, logging.StreamHandler)
    handler.stream = sys.stdout  # Powertools keeps the stream of the first logger for this service
    capsys.readouterr()
    mesh.deliver(envelope(id="trace-me"))
    logs = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"level"' in line]
    failure = next(entry for entry in logs if entry["message"] == "handler failed")
    assert failure["correlation_id"] == "trace-me"
    assert failure["actor"] == "a"
    assert (failure["error_type"], failure["error_message"]) == ("ValueError", "bad input {'text': 'hello'}")


def test_a_failures_log_line_cuts_a_long_message_short(mesh: Mesh, monkeypatch: pytest.MonkeyPatch) -> None:
    """The handler's message is in the failure's log line (what the console's task log shows), cut at
    300 characters: a message quoting its input would swell every line of a failing batch."""
    logged: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(Telemetry, "log_failure", lambda _, message, **fields: logged.append((message, fields)))
    mesh.actor("explode")
    mesh.deliver(envelope(payload={"text": "x" * 1000}))
    [fields] = [fields for message, fields in logged if message == "handler failed"]
    assert fields["error_type"] == "ValueError"
    assert fields["error_message"].startswith("bad input {'text': 'xxx")
    assert len(fields["error_message"]) == 300


def test_tracing_can_be_switched_on(mesh: Mesh) -> None:
    mesh.actor("enrich", ASYA_TRACING="true")
    assert mesh.deliver(envelope()) == {"batchItemFailures": []}
    assert len(mesh.messages("b")) == 1


def test_importing_asya_is_light() -> None:
    """`import asya` must not pull the sidecar's dependencies in: they load on first use."""
    probe = (
        "import sys, asya; print(sorted(m for m in ('pydantic', 'boto3', 'aws_lambda_powertools') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_disabled_metrics_do_not_accumulate(
    mesh: Mesh, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Powertools never clears its metric set while disabled: twelve batches put 120 values on each metric,
    past the 100 at which an enabled set is flushed, and must neither print nor fail."""
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    sidecar = mesh.actor("records_metric")
    capsys.readouterr()
    for batch in range(12):
        assert mesh.deliver(*[envelope(id=f"e-{batch}-{n}") for n in range(10)]) == {"batchItemFailures": []}
    assert _emf(capsys.readouterr().out) == []
    assert sidecar.telemetry.metrics.metric_set == {}
    assert len(mesh.messages("b")) == 120


def test_a_handler_metric_sharing_a_sidecar_name_is_kept(mesh: Mesh, capsys: pytest.CaptureFixture[str]) -> None:
    mesh.actor("records_envelope_size")
    capsys.readouterr()
    mesh.deliver(*[envelope(id=f"e-{n}") for n in range(10)])
    blob = next(b for b in _emf(capsys.readouterr().out) if "EnvelopeSize" in b)
    assert len(blob["EnvelopeSize"]) == 20  # type: ignore[arg-type]


def test_envelope_size_is_counted_in_bytes(mesh: Mesh, capsys: pytest.CaptureFixture[str]) -> None:
    mesh.actor("enrich")
    body = json.dumps(envelope(payload={"text": "世界" * 100}), ensure_ascii=False)
    capsys.readouterr()
    mesh.deliver(body)
    totals = next(b for b in _emf(capsys.readouterr().out) if "EnvelopeSize" in b)
    assert totals["EnvelopeSize"] == [float(len(body.encode()))]

"""Fault injection in the local stack: what goes wrong on AWS, on purpose and at a given rate.

A `FaultSpec` (from `asya up --faults FILE-or-inline` or a test's `LocalStack(faults=...)`) is
handed to the workers only, never to the deployer, the CLI or a test's own clients. Each worker
draws its decisions from its own random stream (the spec's seed, the function and the worker's
spawn number), so a seed gives every worker the same sequence of decisions from run to run; which
envelope meets which decision still depends on timing.

- `aws`: the function's own AWS calls (not its event source's polling) fail at the given rates,
  through botocore's event hooks on every client the function makes, so botocore's retries and the
  mesh's own handling see exactly what they would see on AWS: a throttling error with the service's
  code (`ThrottlingException` for SQS, `ProvisionedThroughputExceededException` for DynamoDB,
  `SlowDown` for S3), a server error (`InternalError`, HTTP 500), a connection reset before the
  request arrives (`ConnectionClosedError`), a read timeout after the request was applied
  (`ReadTimeoutError`: the call's effect happens, its answer is lost, a retry applies it again),
  and partial batch failures: some entries of a `SendMessageBatch` are not sent and come back in
  `Failed`; some requests of a `BatchWriteItem` are not written and come back in `UnprocessedItems`.
- `kill_worker_rate`: the fraction of queue invocations in which the worker SIGKILLs itself at
  one of the invocation's first `KILL_WITHIN_CALLS` AWS calls (if it makes that many): mid-batch,
  between status writes and sends, with part of the batch's outputs sent and nothing deleted.
- `duplicate_delivery_rate`: the fraction of queue batches in which one message is made visible
  again (`ChangeMessageVisibility` to 0) as the invocation starts, so it is delivered again while
  the first delivery still runs. See docs/local-stack.md ("Fault injection") for why this, and not
  a worker stopped past its visibility timeout, is the faithful concurrent duplicate.
- `restart_every`: the gateway's, the stream poller's and the schedule's workers are SIGKILLed at
  that interval and started again.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import urllib.request
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from asya.envelope import describe_validation_error
from asya.resiliency import Seconds

Rate = Annotated[float, Field(ge=0.0, le=1.0)]
KILL_WITHIN_CALLS = 6
# What a throttled call answers with, per service (botocore's retry treats each as throttling).
THROTTLE_CODES = {"dynamodb": "ProvisionedThroughputExceededException", "s3": "SlowDown"}
SERVER_ERROR_CODES = {"dynamodb": "InternalServerError"}
PARTIAL_BATCH_CALLS = {"sqs": "SendMessageBatch", "dynamodb": "BatchWriteItem"}
_DROPPED = "asya_fault_dropped"


class AwsFaults(BaseModel):
    """Rates per call of a function's AWS client (at most one fault per HTTP attempt)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    throttle: Rate = 0.0
    server_error: Rate = 0.0
    reset: Rate = 0.0
    timeout: Rate = 0.0
    partial_batch: Rate = 0.0  # per SendMessageBatch / BatchWriteItem call

    @model_validator(mode="after")
    def _one_fault_per_attempt(self) -> AwsFaults:
        if self.throttle + self.server_error + self.reset + self.timeout > 1:
            raise ValueError("throttle + server_error + reset + timeout must not exceed 1")
        return self


class Restarts(BaseModel):
    """How often each kind of long-lived worker is killed and started again; absent: never."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    gateway: Seconds | None = None
    stream: Seconds | None = None
    schedule: Seconds | None = None


class FaultSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    seed: int = 0
    kill_worker_rate: Rate = 0.0
    duplicate_delivery_rate: Rate = 0.0
    aws: AwsFaults = AwsFaults()
    restart_every: Restarts = Restarts()
    # The workers that get the other faults, by the names their lines carry (actors, `x-sink`,
    # `gateway`...); absent: every worker. Restarts name their workers themselves.
    functions: list[str] | None = None
    # Of those, the workers that may be killed; absent: all of them. The crew's function timeout
    # (60 s) puts a killed crew batch six minutes away, so a run that must end soon may spare it.
    kill_functions: list[str] | None = None

    def applies_to(self, source: str) -> bool:
        return self.functions is None or source in self.functions

    def for_worker(self, source: str) -> FaultSpec | None:
        """The faults this worker gets: None if it is spared, without kills if it may not be killed."""
        if not self.applies_to(source):
            return None
        if self.kill_functions is not None and source not in self.kill_functions:
            return self.model_copy(update={"kill_worker_rate": 0.0})
        return self


class FaultSpecError(ValueError):
    """The fault spec cannot be read; the message names where it came from and the field."""


def load_faults(source: str) -> FaultSpec:
    """A fault spec from a YAML or JSON file, or given inline as YAML or JSON text."""
    # here, not at the top: workers import this module, and the Lambda runtime has no PyYAML
    import yaml

    from asya_cdk.yaml_text import named_yaml

    path = Path(source)
    where = str(path) if path.is_file() else "inline fault spec"
    text = path.read_text() if path.is_file() else source
    try:
        data = named_yaml(text, where)
    except yaml.YAMLError as exc:
        raise FaultSpecError(f"{where}: not YAML or JSON (and no such file): {exc}") from None
    if not isinstance(data, dict):
        raise FaultSpecError(
            f"{where}: no such file, and not a fault spec (a mapping, e.g. '{{seed: 1, aws: {{throttle: 0.02}}}}')"
        )
    try:
        return FaultSpec.model_validate(data)
    except ValidationError as exc:
        raise FaultSpecError(f"{where}: {describe_validation_error(exc, data)}") from None


class _Body:
    """What `AWSResponse` reads a made-up answer from."""

    def __init__(self, content: bytes) -> None:
        self.content = content

    def stream(self, **_kwargs: Any) -> list[bytes]:
        return [self.content]


def error_response(protocol: str, url: str, status: int, code: str) -> Any:
    """An error answer as the service's protocol writes it, for botocore to parse."""
    from botocore.awsrequest import AWSResponse

    message = "injected by the local stack's fault spec"
    headers = {"x-amzn-RequestId": "asya-fault"}
    if protocol in ("json", "rest-json"):
        headers |= {"x-amzn-errortype": code, "x-amzn-query-error": f"{code};Receiver"}
        body = f'{{"__type": "{code}", "message": "{message}"}}'
    elif protocol == "rest-xml":
        body = f"<Error><Code>{code}</Code><Message>{message}</Message></Error>"
    else:  # query, ec2
        error = f"<Type>Receiver</Type><Code>{code}</Code><Message>{message}</Message>"
        body = f"<ErrorResponse><Error>{error}</Error></ErrorResponse>"
    return AWSResponse(url, status, _http_headers(headers), _Body(body.encode()))


class WorkerFaults:
    """One worker's faults: attached to every botocore client the function makes after `install`."""

    def __init__(self, spec: FaultSpec, stream: str, say: Any = print) -> None:
        self.spec = spec
        self.random = random.Random(stream)
        self.say = say
        self.kill_after = 0  # AWS calls left before the worker kills itself; 0: not armed

    def install(self) -> None:
        """Every client made from now on (boto3's default session's and any other) gets the hooks;
        clients made before (the event source's own) do not."""
        import botocore.session

        original = botocore.session.Session.create_client
        faults = self

        def create_client(session: Any, *args: Any, **kwargs: Any) -> Any:
            client = original(session, *args, **kwargs)
            faults.attach(client)
            return client

        botocore.session.Session.create_client = create_client  # type: ignore[method-assign, assignment]

    def attach(self, client: Any) -> None:
        service = client.meta.service_model.service_name
        protocol = client.meta.service_model.protocol
        events = client.meta.events
        events.register(
            "before-send",
            lambda request, event_name, **_: self._before_send(service, protocol, request, event_name),
        )
        operation = PARTIAL_BATCH_CALLS.get(service)
        if operation is not None and self.spec.aws.partial_batch > 0:
            events.register(f"before-parameter-build.{service}.{operation}", self._drop_entries)
            events.register(f"before-call.{service}.{operation}", self._answer_all_failed)
            events.register(f"after-call.{service}.{operation}", self._report_dropped)

    # --- whole calls ---------------------------------------------------------------------------

    def _before_send(self, service: str, protocol: str, request: Any, event_name: str) -> Any:
        from botocore.exceptions import ConnectionClosedError, ReadTimeoutError

        self._count_call()
        aws = self.spec.aws
        draw = self.random.random()
        call = event_name.removeprefix("before-send.")
        if draw < aws.throttle:
            self.say(f"fault: throttled {call}")
            code = THROTTLE_CODES.get(service, "ThrottlingException")
            return error_response(protocol, request.url, 503 if service == "s3" else 400, code)
        draw -= aws.throttle
        if draw < aws.server_error:
            self.say(f"fault: server error {call}")
            return error_response(protocol, request.url, 500, SERVER_ERROR_CODES.get(service, "InternalError"))
        draw -= aws.server_error
        if draw < aws.reset:
            self.say(f"fault: reset {call}")
            raise ConnectionClosedError(endpoint_url=request.url)
        draw -= aws.reset
        if draw < aws.timeout and _replayable(request.body):
            self.say(f"fault: timeout {call} (applied, answer lost)")
            _send_and_forget(request)
            raise ReadTimeoutError(endpoint_url=request.url)
        return None

    # --- killing the worker ----------------------------------------------------------------------

    def invocation_started(self) -> None:
        """Arm the kill for this invocation, at the given rate."""
        self.kill_after = 0
        if self.random.random() < self.spec.kill_worker_rate:
            self.kill_after = self.random.randint(1, KILL_WITHIN_CALLS)

    def _count_call(self) -> None:
        if self.kill_after:
            self.kill_after -= 1
            if not self.kill_after:
                self.say("fault: killed (SIGKILL) in the middle of a batch")
                os.kill(os.getpid(), signal.SIGKILL)

    # --- duplicate deliveries ------------------------------------------------------------------

    def released(self, messages: list[dict[str, Any]]) -> dict[str, Any] | None:
        """The message of this batch to deliver again while the batch runs, if any."""
        if messages and self.random.random() < self.spec.duplicate_delivery_rate:
            return self.random.choice(messages)
        return None

    # --- partial batch failures ------------------------------------------------------------------

    def _drop_entries(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        """Take some entries out of the request (they will not be applied) and remember them; when
        all are chosen the request is left whole and `_answer_all_failed` answers instead of AWS."""
        if self.random.random() >= self.spec.aws.partial_batch:
            return
        if "Entries" in params:
            entries = params["Entries"]
            dropped = [entry for entry in entries if self.random.random() < 0.5] or [self.random.choice(entries)]
            if len(dropped) < len(entries):
                params["Entries"] = [entry for entry in entries if entry not in dropped]
            context[_DROPPED] = ("sqs", dropped, len(dropped) == len(entries))
            self.say(f"fault: partial batch, {len(dropped)} of {len(entries)} entries fail")
        elif "RequestItems" in params:
            flat = [(table, item) for table, items in params["RequestItems"].items() for item in items]
            chosen = [pair for pair in flat if self.random.random() < 0.5] or [self.random.choice(flat)]
            if len(chosen) < len(flat):
                params["RequestItems"] = _by_table(pair for pair in flat if pair not in chosen)
            context[_DROPPED] = ("dynamodb", _by_table(chosen), len(chosen) == len(flat))
            self.say(f"fault: partial batch, {len(chosen)} of {len(flat)} items unprocessed")

    def _answer_all_failed(self, context: dict[str, Any], **_: Any) -> Any:
        """Every entry was chosen: no request is made, and the answer says that all of them failed."""
        from botocore.awsrequest import AWSResponse

        if not context.get(_DROPPED, (None, None, False))[2]:
            return None
        parsed: dict[str, Any] = {"ResponseMetadata": {"HTTPStatusCode": 200}}
        self._report_dropped(parsed, context)
        return AWSResponse("local-fault", 200, _http_headers({}), _Body(b"")), parsed

    def _report_dropped(self, parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        kind, dropped, _ = context.pop(_DROPPED, (None, None, False))
        if kind == "sqs":
            parsed.setdefault("Failed", []).extend(
                {"Id": entry["Id"], "SenderFault": False, "Code": "InternalError", "Message": "injected"}
                for entry in dropped
            )
        elif kind == "dynamodb":
            unprocessed = parsed.setdefault("UnprocessedItems", {})
            for table, items in dropped.items():
                unprocessed.setdefault(table, []).extend(items)


def _http_headers(values: dict[str, str]) -> Any:
    from botocore.compat import HTTPHeaders

    headers = HTTPHeaders()
    for name, value in values.items():
        headers[name] = value
    return headers


def _by_table(pairs: Any) -> dict[str, list[Any]]:
    grouped: dict[str, list[Any]] = {}
    for table, item in pairs:
        grouped.setdefault(table, []).append(item)
    return grouped


def _replayable(body: Any) -> bool:
    return body is None or isinstance(body, bytes | str)


def _send_and_forget(request: Any) -> None:
    """Apply the call as AWS would have, and drop its answer (the read that timed out)."""
    body = request.body.encode() if isinstance(request.body, str) else request.body
    prepared = urllib.request.Request(request.url, data=body, headers=dict(request.headers), method=request.method)
    with contextlib.suppress(OSError):  # an error answer is lost all the same
        urllib.request.urlopen(prepared, timeout=10).read()

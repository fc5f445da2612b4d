"""What one new process of `bench.cold_start` runs: a function's cold start, timed from inside.

    python -m bench.cold_start_run <case>      (the event in COLD_START_EVENT, as JSON)

The clock starts before anything of the case is imported and stops when its first invocation
returns: the handler module's import (Lambda's init) and the first event, which is where lazily
imported code and the first AWS clients are paid. Nothing but `sys`, `time` and `typing` (which both
sides import) is imported before the clock starts, so a module either side needs is counted on that side.

Every AWS call is answered in process (`answer_aws_in_process`), so nothing leaves the machine and
each side pays for building its clients and requests exactly as on AWS, but not for the network.
The answers are put in place the moment a side imports boto3 (`AnswerOnImport`), not before: each
side pays for boto3 when it would on AWS (an actor at its first event, the Powertools hop at its
import). The last line printed is the measurement, as JSON.
"""

from __future__ import annotations

import sys
import time
from typing import Any

STARTED = time.perf_counter()

REGION = "us-east-1"
ACCOUNT = "123456789012"
SEAL_TEXT = "cold-start-seal"  # the mesh's seal secret, as the stub answers it (`bench.cold_start` seals with it)
# each case: the handler's module (imported: the init) and the name of its entry point in it
CASES = {
    "actor": ("asya.actor", "lambda_handler"),
    "powertools": ("bench.powertools_sqs", "lambda_handler"),
    "gateway": ("asya_gateway.api", "lambda_handler"),
    "powertools-api": ("bench.powertools_api", "lambda_handler"),
}


class Context:
    """What a Lambda context gives that the handlers read."""

    function_name = "cold-start"
    function_version = "$LATEST"
    memory_limit_in_mb = 512
    aws_request_id = "cold-start-request"
    invoked_function_arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:cold-start"

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


def answer_aws_in_process(calls: list[str]) -> None:
    """Answer every call boto3's default session makes (botocore's `before-send` event: after the request
    is built and signed, before it is sent) with what that operation returns when it succeeds, and note
    its name in `calls`. Both sides' clients come from that session."""
    import json

    import boto3
    from botocore.awsrequest import AWSResponse

    class Body:
        def __init__(self, content: bytes) -> None:
            self.content = content

        def stream(self, **_: Any) -> Any:
            return iter([self.content])

    def answer(request: Any, event_name: str, **_: Any) -> AWSResponse:
        operation = event_name.rsplit(".", 1)[-1]
        calls.append(operation)
        sent = json.loads(request.body or b"{}")
        answers: dict[str, Any] = {
            "GetQueueUrl": {"QueueUrl": f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{sent.get('QueueName')}"},
            "SendMessage": {"MessageId": "m-1", "MD5OfMessageBody": ""},
            "SendMessageBatch": {
                "Successful": [{"Id": entry["Id"], "MessageId": entry["Id"]} for entry in sent.get("Entries", [])],
                "Failed": [],
            },
            "GetSecretValue": {"ARN": sent.get("SecretId"), "Name": "seal", "SecretString": SEAL_TEXT},
            "BatchGetItem": {"Responses": {}, "UnprocessedKeys": {}},
        }
        content = json.dumps(answers.get(operation, {})).encode()
        headers: Any = {"x-amzn-RequestId": "cold-start", "Content-Type": "application/x-amz-json-1.0"}
        return AWSResponse(request.url, 200, headers, Body(content))

    boto3.setup_default_session()
    assert boto3.DEFAULT_SESSION is not None
    answers_instead: Any = answer  # a `before-send` handler that returns a response stands in for the send
    boto3.DEFAULT_SESSION.events.register("before-send", answers_instead)


class AnswerOnImport:
    """A finder on `sys.meta_path` that waits for boto3's import, lets it run, then answers AWS in
    process (`answer_aws_in_process`) before the importer makes a client; once, then it steps aside."""

    def __init__(self, calls: list[str]) -> None:
        self.calls = calls

    def find_spec(self, name: str, *_: Any) -> Any:
        if name != "boto3":
            return None
        import importlib.util

        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        assert spec is not None, "boto3 is not installed"
        assert spec.loader is not None
        load = spec.loader.exec_module

        def exec_module(module: Any) -> None:
            load(module)
            answer_aws_in_process(self.calls)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def main(case: str) -> None:
    import importlib
    import json
    import os

    calls: list[str] = []
    sys.meta_path.insert(0, AnswerOnImport(calls))
    module, entry = CASES[case]
    handler = getattr(importlib.import_module(module), entry)
    answer = handler(json.loads(os.environ["COLD_START_EVENT"]), Context())
    elapsed_ms = (time.perf_counter() - STARTED) * 1000
    print(json.dumps({"ms": elapsed_ms, "calls": calls, "answer": answer}))


if __name__ == "__main__":
    main(sys.argv[1])

"""The flow on the local stack, as `asya up` runs it: each function in its own process with only what
it ships (its code, libraries, files and secrets), behind the gateway's HTTP API. The stack starts
once for the session (`asya_stack`, the asya-aws pytest plugin's fixture), which takes a few tens of
seconds: `pytest --ignore tests/test_on_local_stack.py` leaves it out of a quick run.
"""

from __future__ import annotations

from asya_local.testing.pytest_plugin import RunningStack


def test_the_flow_counts_a_text_on_the_local_stack(asya_stack: RunningStack) -> None:
    task = asya_stack.run("count-words", {"text": "Hello, hello world"}, seconds=60)
    assert task["status"] == "succeeded", "\n".join(asya_stack.worker_lines[-30:])
    assert task["output"]["counts"] == {"hello": 2, "world": 1}

"""A container actor's runtime: the sidecar as a long-running SQS consumer (docs/containers.md).

`python -m asya.consumer` long-polls the actor's queue and hands each batch, shaped as Lambda's SQS
event, to the same `Sidecar.handle` a Lambda actor's entry point calls: routing, retries, x-sump,
status writes and the hop's claim are the Lambda actor's own. What Lambda's event source does around
that call (deleting what succeeded, leaving failures to come back) the loop does itself, and it keeps
the messages it holds invisible while their hops run (`asya.consumer.holding`).
"""

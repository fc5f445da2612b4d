"""What the mesh's own tests and benches use to run a mesh and judge it, in one place, so that a
user's tests can use the same (docs/testing.md):

- `inprocess`: a whole mesh in one process, each actor behind its own sidecar, on moto's in-memory AWS;
- `tables`: the mesh's tables as the CDK app defines them;
- `moto_server`: the local endpoint's process with its patches, and unpatched moto, on loopback;
- `metering`: what AWS would bill a run, request by request;
- `chaos`: a mesh under every fault the local stack injects, its envelopes counted.

The events Lambda hands a function (an SQS batch, a context) are built by
`asya_local.functions.lambda_shapes`, which the local stack's stand-ins use too.
"""

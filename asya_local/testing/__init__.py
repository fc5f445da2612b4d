"""What the mesh's own tests and benches use to run a mesh and judge it, kept in one place so that a
user's tests can use the same (docs/testing.md): the in-process mesh, the tables as the CDK app
defines them, what AWS would bill a run, and the chaos harness that counts envelopes under faults."""

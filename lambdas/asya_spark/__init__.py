"""The Lambda side of Spark actors: `dispatch` turns queued envelopes into EMR Serverless jobs,
`collect` routes what the jobs produced (or sends their envelopes through resiliency when a job fails).

Both are built on the `asya` core, like every actor: the envelopes a Spark job produces are routed by
the same hop pipeline (`asya.batch`) and sent by the same grouped sender (`asya.sending`).
"""

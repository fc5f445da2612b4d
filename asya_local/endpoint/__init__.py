"""The local AWS endpoint: moto's server, the fixes it needs to behave as AWS does, and the Spark
runner standing in for EMR Serverless's compute, all in one process of their own (`server`)."""

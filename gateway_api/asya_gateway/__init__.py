"""The status gateway: the HTTP API and MCP endpoint, the DynamoDB stream consumer and the deadline
backstop. Deployed as Lambda functions that share the sidecar layer (for the `asya` core)."""

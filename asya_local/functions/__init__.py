"""The Lambda stand-ins: one process per execution environment, doing what invokes a function on AWS
(an SQS event source mapping, a DynamoDB stream's, a schedule, API Gateway) around its real handler."""

"""The product-catalogue example: Lambda actors and Spark actors in one pipeline."""

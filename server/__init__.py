"""The pooling server: institutions, contributions, pooled training runs, published
pipelines and audits behind a FastAPI app (docs/server.md)."""

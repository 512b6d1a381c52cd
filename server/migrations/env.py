"""Alembic environment: migrations run on the connection that `deidpool.server.database.upgrade`
passes in `config.attributes["connection"]`."""

from alembic import context

from deidpool.server.database import Base

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()

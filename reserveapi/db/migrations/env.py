from alembic import context

from reserveapi.db import models

connection = context.config.attributes['connection']
context.configure(connection=connection,
                  target_metadata=models.Base.metadata,
                  render_as_batch=True)

with context.begin_transaction():
    context.run_migrations()

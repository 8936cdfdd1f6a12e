"""Store: the data model, interchange schema, import/export, database and migrations."""

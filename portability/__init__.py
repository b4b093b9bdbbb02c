"""Moving memory between instances and embedders: a scope's export and import as JSON lines, and re-embedding
every stored vector. A client of the store (facts), which knows nothing of it."""

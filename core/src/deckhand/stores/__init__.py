"""Vector stores: the builtin in-memory store, and opening a tool's collection with its compatibility checks."""

"""The data tools keep for their callers: sealed, counted in a ledger, streamed to a store
made for files, and read back by range."""

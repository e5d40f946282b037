"""Long calls as MCP tasks: the record, its two wire forms, the engine and the protocol."""

"""The service's settings: read once from ``MCP_*`` environment variables, checked, and
passed to the parts that need them (``docs/settings.md``)."""

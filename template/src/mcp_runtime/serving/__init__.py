"""Serving the tools: the MCP server, its HTTP app, the worker processes and the command
line."""

"""The HTTP front of the MCP endpoint: small ASGI parts, one concern each.

``http_app`` stacks them in front of the SDK's streamable HTTP app, in the order
:func:`mcp_runtime.serving.http_app.front` lists, which is the order a request meets
them. A part answers the requests that are its concern and passes every other one on
unchanged; what one part learns of a POST (its verified token, its body, its parsed
message) it leaves in the request's :class:`Posted` for the parts after it, so no part
reads or parses what another already has. What each answers, and the setting of each
limit, is in the service's ``docs/production.md``.
"""

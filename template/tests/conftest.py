"""Fixtures shared by your tests: this file is yours.

The runtime's fixtures (``server``: the service's server, built through the gate;
``anyio_backend``) come from ``mcp_runtime.devtools.pytest_plugin``, which ``pyproject.toml``
loads. The runtime's own tests live in ``tests/runtime/`` and are the template's.
"""

"""Developer tooling, left out of the production wheel and image: the scaffolds, the test
clients, a local OAuth issuer and the pytest plugin. Tests import it through
:mod:`mcp_runtime.testing`."""

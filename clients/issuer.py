"""A test authorization server for the client checks, run in the service's environment.

Starts the runtime's ``LocalIssuer`` (``mcp_runtime.devtools.local_issuer``), which serves its
signing keys (a JWKS) on a loopback port, and prints one JSON line: ``environment``, the
``MCP_*`` settings of a service that trusts it for RESOURCE_URL; ``issuer``; and
``token``, an access token for RESOURCE_URL whose subject is SUBJECT. It serves its keys
until its standard input closes.

Usage: uv run python issuer.py RESOURCE_URL SUBJECT
"""

import json
import sys

from mcp_runtime.devtools.local_issuer import LocalIssuer


def main(resource_url: str, subject: str) -> None:
    with LocalIssuer() as issuer:
        answer = {
            "environment": issuer.environment(resource_url),
            "issuer": issuer.issuer,
            "token": issuer.token(subject=subject, audience=resource_url),
        }
        print(json.dumps(answer), flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

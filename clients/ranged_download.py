"""A ranged downloader resuming a cut download of kept data: ``multiurl`` (the downloader
of ECMWF's data-store clients), through a proxy that cuts the first download of the file
after 1.5 MB, gets the whole 20 MB that ``big_file`` kept, by asking for the rest
(``Range: bytes=N-``, after a ``HEAD`` that says the service takes ranges).

    python ranged_download.py URL

URL is the service's MCP endpoint, serving the long-calls toolset without authentication.
Runs in an environment with ``multiurl``. Exit status 0 when the file arrives whole, cut
once and resumed; otherwise 1, with a FAIL line.
"""

import asyncio
import json
import sys
import tempfile
import threading
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import multiurl  # type: ignore[import-not-found]
import requests  # type: ignore[import-untyped]

CUT_AFTER = 1_500_000
MEGABYTES = 20


class CuttingProxy:
    """A TCP proxy to ``host:port`` that closes the first download (``GET /data/``) after
    :data:`CUT_AFTER` bytes of its answer, and passes everything else through."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.cut = 0
        self.requests: list[str] = []
        self.loop = asyncio.new_event_loop()
        self.server = self.loop.run_until_complete(
            asyncio.start_server(self.connection, "127.0.0.1", 0)
        )
        self.port = self.server.sockets[0].getsockname()[1]
        threading.Thread(target=self.loop.run_forever, daemon=True).start()

    def close(self) -> None:
        """Stop the proxy (each connection has ended with its one answer)."""
        self.loop.call_soon_threadsafe(self.server.close)
        self.loop.call_soon_threadsafe(self.loop.stop)

    async def connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_connection(*self.target)
        head = await reader.readuntil(b"\r\n\r\n")
        line = head.split(b"\r\n", 1)[0].decode()
        ranges = [field for field in head.split(b"\r\n")[1:] if field.lower().startswith(b"range")]
        self.requests.append(line + "".join(f" [{field.decode()}]" for field in ranges))
        cutting = line.startswith("GET /data/") and self.cut == 0
        # One request a connection: the service closes it once it has answered.
        fields = [field for field in head.split(b"\r\n") if field]
        kept = [field for field in fields if not field.lower().startswith(b"connection:")]
        head = b"\r\n".join([*kept, b"Connection: close"]) + b"\r\n\r\n"
        upstream_writer.write(head)
        await upstream_writer.drain()
        sent = 0
        try:
            while piece := await upstream_reader.read(64 * 1024):
                if cutting and sent + len(piece) > CUT_AFTER:
                    writer.write(piece[: CUT_AFTER - sent])
                    await writer.drain()
                    self.cut += 1
                    break
                writer.write(piece)
                await writer.drain()
                sent += len(piece)
        finally:
            writer.close()
            upstream_writer.close()


def keep(url: str) -> dict[str, str]:
    """``big_file``'s link to 20 MB kept for the caller."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "big_file", "arguments": {"megabytes": MEGABYTES}},
    }
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2025-11-25",
        },
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        result = json.loads(answer.read())["result"]
    return dict(result["structuredContent"]["file"])


def main() -> int:
    url = sys.argv[1]
    file = keep(url)
    address = urlsplit(url)
    proxy = CuttingProxy(address.hostname or "127.0.0.1", address.port or 80)
    expected = (bytes(range(256)) * (MEGABYTES * 1_000_000 // 256 + 1))[: MEGABYTES * 1_000_000]
    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder, "big.bin")

        def download(address: str, path: str) -> requests.Response:
            # As ECMWF's data-store client downloads a result: multiurl, wrapped in its
            # ``robust``, which calls again after a cut connection, and resumes.
            try:
                multiurl.download(
                    address,
                    target=path,
                    maximum_retries=0,
                    stream=True,
                    resume_transfers=True,
                    progress_bar=multiurl.base.NoBar,
                )
            except requests.HTTPError as exc:
                return exc.response
            return requests.Response()

        multiurl.robust(download, retry_after=0)(
            f"http://127.0.0.1:{proxy.port}{file['download']}", str(target)
        )
        got = target.read_bytes()
    proxy.close()
    ranged = [line for line in proxy.requests if "range" in line.lower()]
    if got != expected or proxy.cut != 1 or not ranged:
        print(
            f"FAIL multiurl: a cut download of {MEGABYTES} MB: {len(got)} bytes, "
            f"{'whole' if got == expected else 'not the file'}; cut {proxy.cut} time(s); "
            f"requests {proxy.requests}"
        )
        return 1
    print(f"ok   multiurl: a download cut after {CUT_AFTER} bytes resumed whole ({ranged[0]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

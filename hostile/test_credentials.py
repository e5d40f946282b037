"""The credential demo knows no token unless DEMO_TOKENS names it."""

import pytest
from harness import Launcher, client_call, error_text

pytestmark = pytest.mark.anyio


async def test_without_demo_tokens_the_demo_token_is_refused(launch: Launcher) -> None:
    server = launch()
    if "whoami" not in server.schemas:
        pytest.skip("this service was rendered without the credential demo")
    answer = await client_call(server, "whoami", {}, headers={"x-demo-token": "demo-token"})
    assert "not recognized" in error_text(answer)
    server.assert_alive()


async def test_a_token_demo_tokens_names_is_recognized(launch: Launcher) -> None:
    server = launch(DEMO_TOKENS="tok-4471=acct-7")
    if "whoami" not in server.schemas:
        pytest.skip("this service was rendered without the credential demo")
    answer = await client_call(server, "whoami", {}, headers={"x-demo-token": "tok-4471"})
    assert answer["structuredContent"]["account"] == "acct-7", answer
    server.assert_alive()

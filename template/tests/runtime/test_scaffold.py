"""scripts/new-toolset and scripts/new-tool refuse bad input: exit 2, a message, no file changed."""

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_runtime import scaffold

ROOT = Path(__file__).resolve().parents[2]


def snapshot() -> dict[str, str]:
    """Every file of the service's sources, tests and contract, with a hash of its content."""
    files = [*ROOT.joinpath("src").rglob("*.py"), *ROOT.joinpath("tests").rglob("*.py")]
    files += list(ROOT.joinpath("contract").glob("*.json"))
    return {str(path): hashlib.sha256(path.read_bytes()).hexdigest() for path in files}


@pytest.fixture
def unchanged(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Run from the service's root, and check that no file changed."""
    monkeypatch.chdir(ROOT)
    before = snapshot()
    yield
    assert snapshot() == before


def refusal(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert scaffold.main(list(argv)) == 2
    output = capsys.readouterr()
    assert output.out == ""
    assert output.err.endswith("\nNothing was written.\n")
    return output.err.removeprefix("error: ").removesuffix("\nNothing was written.\n")


@pytest.mark.usefixtures("unchanged")
def test_empty_name_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    message = refusal(capsys, "new-toolset", "  ")
    assert message == "The toolset name is empty: give a name such as 'weather data'."


@pytest.mark.usefixtures("unchanged")
def test_name_without_letters_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    message = refusal(capsys, "new-toolset", "!!!")
    assert message.startswith("The toolset name '!!!' has no letter or digit")


@pytest.mark.usefixtures("unchanged")
def test_name_that_cannot_be_an_identifier_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    message = refusal(capsys, "new-toolset", "3D Maps")
    assert message == (
        "The toolset name '3D Maps' gives '3d_maps', which cannot be a Python identifier: "
        "start it with a letter."
    )


@pytest.mark.usefixtures("unchanged")
def test_keyword_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    message = refusal(capsys, "new-toolset", "Class")
    assert message.startswith("The toolset name 'Class' gives 'class', a Python keyword")


@pytest.mark.usefixtures("unchanged")
def test_stdlib_module_name_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    message = refusal(capsys, "new-toolset", "JSON")
    assert "shadows the standard library module 'json'" in message


@pytest.mark.usefixtures("unchanged")
def test_existing_toolset_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    message = refusal(capsys, "new-toolset", "Hello")
    assert message.startswith("The toolset 'hello' already exists")
    assert "scripts/new-tool hello NAME" in message


@pytest.mark.usefixtures("unchanged")
def test_existing_tool_name_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    message = refusal(capsys, "new-tool", "hello", "Hello")
    assert message == (
        "The tool name 'hello' is already used by the toolset 'hello': "
        "tool names are unique across the service; choose another name."
    )


@pytest.mark.usefixtures("unchanged")
def test_tool_for_a_missing_toolset_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    message = refusal(capsys, "new-tool", "no-such-toolset", "lookup")
    assert message.startswith("There is no toolset 'no-such-toolset': the service has ")


@pytest.mark.usefixtures("unchanged")
def test_tool_name_is_checked_like_a_toolset_name(capsys: pytest.CaptureFixture[str]) -> None:
    message = refusal(capsys, "new-tool", "hello", "import")
    assert message.startswith("The tool name 'import' gives 'import', a Python keyword")


@pytest.mark.usefixtures("unchanged")
def test_existing_test_file_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    message = refusal(capsys, "new-tool", "hello", "scaffold")
    assert message == (
        "tests/test_scaffold.py already exists: choose another tool name, or move that file."
    )


def test_help_explains_the_rules(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        scaffold.main(["new-toolset", "--help"])
    assert exited.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith("usage: scripts/new-toolset [-h] NAME")
    for rule in ("normalised", "exit status 2", "keyword", "standard library", "restored"):
        assert rule in text

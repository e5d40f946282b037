"""What each nox session proves: said once, here.

noxfile.py runs the sessions of ``PROVES`` by default, in its order, shows the start of
each text in ``nox -l`` and prints the whole of it at the end of a run. docs/testing.md's
table "What each session proves" is ``table()``: ``python -m tests.sessions`` writes it
there, and tests/test_sessions.py fails while the two differ. Like tests/rendering.py,
noxfile.py imports this module, so it needs only the standard library until it
describes a cell (yaml).
"""

import re
import sys

from tests.rendering import AWKWARD_NAMES, TEMPLATE, WHOLE_SUITE_CELLS, Cell

TESTING = TEMPLATE / "docs" / "testing.md"

# Markdown: backticks name code; the end-of-run table prints the text without them.
PROVES = {
    "template_tests": (
        "the questions and their validators; every answer set, awkward name and licence "
        "renders, records its answers and is ruff-clean; the template README's "
        "render-and-serve line and the rendered README's quick start run as written (the "
        "team's `uv run pytest` among them); Kubernetes names, image and command, and the "
        "manifests built by `kubectl kustomize` (every object, the image the release workflow "
        "pushes, each name one object gives another); the Inspector the docs run is the one "
        "the clients check pins; a render from a folder says how to record the template's "
        "git URL, and its closing message lists only what is left to do; a team's first week "
        "(scaffolds, their tests, lint, `check`, `schema`) on Python 3.11; a breaking "
        "contract change fails the service's CI until recorded; pre-commit, workflows "
        "(actionlint), Renovate's schema; the matrix's coverage; every question in each "
        "place that adding one touches"
    ),
    "lint": (
        "ruff check and format on this repository's Python; deptry: every import of the "
        "Python that runs in this repository's own environments (tests, hooks, noxfile) is "
        "declared in `requirements-dev.txt` or `tests/requirements.txt`"
    ),
    # One session a cell of WHOLE_SUITE_CELLS: each line starts with the cell's answers.
    "service": (
        "`scripts/lint` (ruff, mypy --strict, deptry) and the whole runtime suite (its "
        "scaffold tests add toolsets, a tool named like its own test modules and task tools "
        "to a copy of the service, then run its lint, tests and contract; its task tests "
        "serve two processes on a `redis-server` of their own, and kill, stop, restart and "
        "cut off their store under running tasks; its tests of kept data stream data into a "
        "directory and into an S3 bucket of moto's server, read it through another process "
        "and after a restart, resume cut downloads with curl and wget, sweep the write of a "
        "killed process, and write a taken-over task's datum again in place; its tests of "
        "the task engine count the store's round trips of a wait, a cancel and a list; its "
        "tests of Docket's behaviours that the engine works around, and of each private part "
        "of the SDK the runtime reaches, fail on a release that changes them; those marked "
        "`any_python`, of processes, signals, the stores, pytest's collection, the "
        "scaffold's copy of the service and the direct path held to the SDK's answers, on "
        "the first Python only), `check` by console script and by `python -m`, `schema` typed"
    ),
    "names": (
        "each awkward name (`NAME_CELLS`, on each Python), four at a time "
        "(`nox -s names -- q long` runs some): recorded answers; a task toolset named "
        "`serving` scaffolded through `scripts/new-toolset --task optional`, linted for the "
        "cell's Python; with the whole suite collected, the team's "
        "tests, the new ones and the runtime's tests that read the name's form (`NAME_TESTS`: "
        "Kubernetes names, client setups, gate, contract); lint; `check` through the command "
        "and `schema` through `python -m`"
    ),
    "update": (
        "`copier update` over a real history (0.9.0, 0.10.0 on the MCP SDK's 1.x line, 1.0.0, "
        "1.1.0): a service of 0.10.0 moves to the SDK's 2.x line and to the runtime's parts "
        "as fixes, a dependency bound and a new question arrive, and serves both eras; a "
        "team's edit of a runtime module, and its imports of one, follow the module into its "
        "part; the team's files stay byte-identical; edits survive or show as conflicts, "
        "which the update names, `scripts/lint` refuses, and the way back of the service's "
        "docs undoes; the team's `uv.lock` moves only as far as the release's changes to "
        "`pyproject.toml` require (a dependency and pins of its own kept, `uv lock --check` "
        "passing, the environment in step); licences are never rewritten; the updated "
        "runtime, its tests and "
        "scripts equal a fresh render's at the new release; the team's tests, gate, "
        "contract, collection and lint pass, its test of a former name of the runtime "
        "(`to_fastmcp`) with a deprecation warning; the scheduled template check, and its advice "
        "when it cannot clone the template"
    ),
    "clients": (
        "both eras on one endpoint, against a default render: the conformance suite; the "
        "TypeScript clients (the 1.x SDK, and the 2.x client negotiating `legacy`, `auto` and "
        "pinned to 2026-07-28); the Python SDK's 2.x client in each mode; "
        "langchain-mcp-adapters' client (on mcp 1.x) and `langchain.mcp`'s adapter; every "
        "program and Inspector line of the service's `docs/clients.md` as written, each "
        "program from its install line (the MCP Python SDK, fastmcp, fastmcp-tasks, the "
        "TypeScript client with and without ext-tasks), the Inspector's lines through `npx` "
        "(its web UI, its CLI over HTTP and over stdio), for `auth=oauth` and `demo-header`, "
        "and without a token against `MCP_AUTH=none`; with and without credentials, OAuth "
        "401; client setups; the rendered README's quick start under `oauth` as written "
        "(`dev-token`, `serve` with its settings, the Inspector sending the token: `whoami` "
        "answers its subject); a lone surrogate answered by its call's id; progress and "
        "cancellation in both eras; results of 5 and 20 MB, at once, after 16 s and reporting "
        "progress, through the TypeScript clients, fastmcp's `Client` and the Python SDK's 2.x "
        "client on their defaults; a download of 20 MB of kept data cut after 1.5 MB, "
        "resumed whole by `multiurl` (ECMWF's data-store clients' downloader) with a range; "
        "the conformance suite's tasks scenarios (0.2.0-alpha.12) "
        "against its fixture tools, tasks in memory and two workers on one Redis, each "
        "failure one `clients/conformance_tasks.json` expects; against both stores, tasks "
        "through fastmcp-tasks' client, the TypeScript 2.x client with ext-tasks in each era "
        "and the 1.x SDK's experimental tasks: the example `prepare_report` as a task (its "
        "progress the status message, its typed result), a `ToolError`, a cancel; and each "
        "of these clients reading a task's result across a rolling restart of two processes "
        "behind a balancer, each handing its task on"
    ),
    # Run by default in place of the two it runs side by side (DEFAULT below).
    "served": (
        "`clients` and `hostile` side by side, each in a nox process of its own, in the "
        "time of the longer: both wait on their servers and clients more than they compute; "
        "each is a row of the table, and `nox -s clients` or `nox -s hostile` runs one alone"
    ),
    "hostile": (
        "a default render serving tools that misbehave, to clients that break the rules: one "
        "answer per call, and one per request with an id (both eras), masking with an error "
        "id, timeouts, a hung tool held to its share of the threads, shutdown on real "
        "signals, request limits, no leaks in answers or logs; the same tools run as tasks in "
        "both eras of tasks: each task ends with a plain call's answer, 20 MB in one JSON "
        "body, a hung thread at the task timeout, a cancel that stays"
    ),
}


# The sessions of a plain `nox`, in order: `served` runs `clients` and `hostile` beside
# each other (SIDE_BY_SIDE).
# (`template_tests` beside `update` took longer than one after the other: they wait on
# copier, git and uv's cache, not on a core.)
SIDE_BY_SIDE = {
    "served": ("clients", "hostile"),
}
DEFAULT = [
    name
    for session in PROVES
    for name in (
        [f"service({cell.id})" for cell in WHOLE_SUITE_CELLS] if session == "service" else [session]
    )
    if not any(name in together for together in SIDE_BY_SIDE.values())
]


def describe(cell: Cell) -> str:
    """The answers ``cell`` renders with, in a few words; the questions' defaults for the rest."""
    import yaml  # here: noxfile.py imports this module where yaml may be missing

    questions = yaml.safe_load((TEMPLATE / "copier.yml").read_text())
    shown = ("project_name", "auth", "include_credential_demo", "license")
    answers = {**{key: questions[key]["default"] for key in shown}, **cell.answers}
    name = f"`{answers['project_name']}`"
    if cell.awkward_name:  # why the name is awkward, in its first words
        name += f" ({AWKWARD_NAMES[cell.awkward_name]['why'].split(';')[0]})"
    demo = "the credential demo" if answers["include_credential_demo"] else "no credential demo"
    return f"Python {cell.python}, {name}, `auth={answers['auth']}`, {demo}, `{answers['license']}`"


def proves(session: str, cell: Cell | None = None) -> str:
    """What ``session`` proves; for a cell of ``service``, after the cell's answers."""
    return f"{describe(cell)}: {PROVES[session]}" if cell else PROVES[session]


def table() -> str:
    """docs/testing.md's table of the sessions: each cell of ``service`` a row."""
    rows = ["| session | what it proves |", "|---|---|"]
    for session, text in PROVES.items():
        if session != "service":
            rows.append(f"| `{session}` | {text} |")
            continue
        for number, cell in enumerate(WHOLE_SUITE_CELLS):
            said = text if number == 0 else "the same"
            rows.append(f"| `service({cell.id})` | {describe(cell)}: {said} |")
    return "\n".join(rows) + "\n"


# The table in docs/testing.md: its header, up to the first line that is not a row.
DOCUMENTED = re.compile(r"^\| session \| what it proves \|\n(?:\|.*\n)*", re.MULTILINE)


def main() -> None:
    """Write ``table()`` over the table in docs/testing.md."""
    text = TESTING.read_text()
    if not DOCUMENTED.search(text):
        sys.exit(f"{TESTING} has no table headed '| session | what it proves |'")
    TESTING.write_text(DOCUMENTED.sub(lambda _: table(), text, count=1))


if __name__ == "__main__":
    main()

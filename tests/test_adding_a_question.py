"""Adding a question: each question of copier.yml is in every place the checklist names.

The checklist is docs/testing.md's "Adding a question"; this checks the places a
program can read, and names the question and the place it is missing from.
"""

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.rendering import ANSWER_SETS, AWKWARD_NAMES, NAME_CELLS, TEMPLATE, WHOLE_SUITE_CELLS
from tests.test_render import RECORDED_ANSWERS

QUESTIONS = {
    key: value
    for key, value in yaml.safe_load((TEMPLATE / "copier.yml").read_text()).items()
    if not key.startswith("_")
}
# The questions of the first release (0.9.0: tests/test_update.py's OLD_LAYOUT), which
# every service was asked; a service from before any other did without it.
FIRST_RELEASE_QUESTIONS = {
    "project_name",
    "project_slug",
    "package_name",
    "description",
    "author_name",
    "author_email",
    "python_version",
    "include_credential_demo",
}
# A later question whose default is what the services rendered before it did, so that
# hooks/answer_new_questions.py need not answer it for them: the question, and why.
DEFAULT_IS_THE_OLD_BEHAVIOUR: dict[str, str] = {}
HOOK = TEMPLATE / "hooks" / "answer_new_questions.py"
# Every answer the matrix renders: the answer sets, the awkward names, and each cell's.
MATRIX_ANSWERS = [
    *ANSWER_SETS.values(),
    *(name["answers"] for name in AWKWARD_NAMES.values()),
    *(cell.answers for cell in (*WHOLE_SUITE_CELLS, *NAME_CELLS)),
]


def readme_questions() -> set[str]:
    """The questions in the first column of README.md's table "The questions"."""
    section = (TEMPLATE / "README.md").read_text().split("\n## The questions\n")[1]
    rows = section.split("\n## ")[0].splitlines()
    return {
        name
        for row in rows
        if row.startswith("| `")
        for name in re.findall(r"`(\w+)`", row.split("|")[1])
    }


def answered_by_the_hook(folder: Path) -> dict[str, Any]:
    """What hooks/answer_new_questions.py records for a service that recorded no question."""
    answers = folder / ".copier-answers.yml"
    answers.write_text("_commit: 0.9.0\n")
    subprocess.run([sys.executable, str(HOOK), str(answers)], check=True)
    recorded = yaml.safe_load(answers.read_text())
    return {key: value for key, value in recorded.items() if key != "_commit"}


def used_by_the_template() -> str:
    """The Jinja of the template: in the names and texts of template/ and includes/."""
    jinja = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.DOTALL)
    paths = [*(TEMPLATE / "template").rglob("*"), *(TEMPLATE / "includes").rglob("*")]
    texts = [str(path) for path in paths]
    texts += [path.read_text() for path in paths if path.suffix == ".jinja" and path.is_file()]
    return "\n".join(block for text in texts for block in jinja.findall(text))


def missing_places(questions: dict[str, Any], hook_answers: dict[str, Any]) -> list[str]:
    """Each question, and each place of the checklist that does not hold it."""
    readme, template = readme_questions(), used_by_the_template()
    validator_tests = (TEMPLATE / "tests" / "test_questions.py").read_text()
    tests = "\n".join(
        path.read_text()
        for path in sorted((TEMPLATE / "tests").glob("*.py"))
        if path.name != Path(__file__).name  # whose texts name the questions it checks
    )
    releases, hook = (TEMPLATE / "docs" / "releases.md").read_text(), HOOK.read_text()
    missing = []
    for name, question in questions.items():
        places = {
            "README.md's table 'The questions'": name in readme,
            "the template's Jinja (template/, includes/): no file uses it": re.search(
                rf"\b{name}\b", template
            ),
            "RECORDED_ANSWERS of tests/test_render.py": name in RECORDED_ANSWERS,
        }
        if "validator" in question:
            places[f"tests/test_questions.py: no refusal(rendered, {name}=...)"] = (
                f"refusal(rendered, {name}=" in validator_tests
            )
        if "choices" in question:
            places[f"tests/: no test that expects \"Invalid choice for '{name}'\""] = (
                f"Invalid choice for '{name}'" in tests
            )
        choices = question.get("choices", [True, False] if question["type"] == "bool" else [])
        values = set(choices.values() if isinstance(choices, dict) else choices)
        rendered = {answers.get(name, question["default"]) for answers in MATRIX_ANSWERS}
        for value in sorted(values - rendered, key=str):
            places[f"the matrix: no answer set or awkward name renders {name}={value!r}"] = False
        if name not in FIRST_RELEASE_QUESTIONS and name not in DEFAULT_IS_THE_OLD_BEHAVIOUR:
            places["hooks/answer_new_questions.py's answers for services from before it"] = (
                name in hook_answers and (not values or hook_answers[name] in values)
            )
        if name in hook_answers:
            places["hooks/answer_new_questions.py's docstring"] = f"``{name}``" in hook
            places["docs/releases.md, on the questions the update answers"] = (
                f"`{name}`" in releases
            )
        missing += [f"{name}: {place}" for place, holds in places.items() if not holds]
    return missing


def test_every_question_is_in_every_place_of_the_checklist(tmp_path: Path) -> None:
    assert missing_places(QUESTIONS, answered_by_the_hook(tmp_path)) == []


def test_the_hook_answers_only_questions(tmp_path: Path) -> None:
    assert set(answered_by_the_hook(tmp_path)) <= set(QUESTIONS) - FIRST_RELEASE_QUESTIONS


def test_a_question_added_to_no_other_place_is_named_with_each_place(tmp_path: Path) -> None:
    """The checklist's test can fail: a question only copier.yml asks."""
    added = {"type": "str", "choices": ["a", "b"], "default": "a", "validator": "{{ '' }}"}
    questions = {**QUESTIONS, "shoe_size": added}
    assert missing_places(questions, answered_by_the_hook(tmp_path)) == [
        "shoe_size: README.md's table 'The questions'",
        "shoe_size: the template's Jinja (template/, includes/): no file uses it",
        "shoe_size: RECORDED_ANSWERS of tests/test_render.py",
        "shoe_size: tests/test_questions.py: no refusal(rendered, shoe_size=...)",
        "shoe_size: tests/: no test that expects \"Invalid choice for 'shoe_size'\"",
        "shoe_size: the matrix: no answer set or awkward name renders shoe_size='b'",
        "shoe_size: hooks/answer_new_questions.py's answers for services from before it",
    ]

"""The template's questions: derived defaults, and each validator's refusals."""

from pathlib import Path

import pytest
import yaml

from tests.conftest import Render


def answers_of(service: Path) -> dict[str, object]:
    loaded = yaml.safe_load((service / ".copier-answers.yml").read_text())
    assert isinstance(loaded, dict)
    return loaded


def refusal(rendered: Render, **answers: object) -> str:
    with pytest.raises(ValueError, match="Validation error") as caught:
        rendered(**answers)
    return str(caught.value)


def test_names_are_derived_from_the_project_name(rendered: Render) -> None:
    answers = answers_of(rendered(project_name="Weather Tools!"))
    assert (answers["project_slug"], answers["package_name"]) == ("weather-tools", "weather_tools")


def test_derived_names_can_be_overridden(rendered: Render) -> None:
    service = rendered(project_name="Weather Tools", project_slug="wx", package_name="wx_core")
    assert (service / "src" / "wx_core" / "toolsets" / "hello.py").is_file()
    assert 'wx = "mcp_runtime.serving.cli:main"' in (service / "pyproject.toml").read_text()


# Names that start with a digit or run long: test_names.py renders them (awkward_names.json).
def test_a_long_word_is_cut(rendered: Render) -> None:
    answers = answers_of(rendered(project_name="W" * 70))
    assert (answers["project_slug"], answers["package_name"]) == ("w" * 63, "w" * 50)


@pytest.mark.parametrize("name", ["", "   "])
def test_empty_project_name_is_refused(rendered: Render, name: str) -> None:
    assert "The project name cannot be empty" in refusal(rendered, project_name=name)


def test_project_name_without_letters_is_refused(rendered: Render) -> None:
    assert "has no letter or digit" in refusal(rendered, project_name="!!!")


@pytest.mark.parametrize("slug", ["Weather-Tools", "weather_tools", "-weather", "a--b", "a b"])
def test_invalid_distribution_name_is_refused(rendered: Render, slug: str) -> None:
    message = refusal(rendered, project_slug=slug)
    assert f'"{slug}" is not a valid distribution name' in message


def test_distribution_name_starting_with_a_digit_is_refused(rendered: Render) -> None:
    message = refusal(rendered, project_slug="3d-printing")
    assert '"3d-printing" starts with a digit, and Kubernetes names' in message
    assert 'such as "mcp-3d-printing"' in message


def test_distribution_name_longer_than_a_kubernetes_name_is_refused(rendered: Render) -> None:
    message = refusal(rendered, project_slug="ab-" * 21 + "c")
    assert f'"{"ab-" * 21}c" has 64 characters, and Kubernetes names' in message
    assert f'such as "{"ab-" * 20}ab"' in message


def test_package_name_longer_than_an_import_line_allows_is_refused(rendered: Render) -> None:
    message = refusal(rendered, package_name="ab_" * 17)
    assert f'"{"ab_" * 17}" has 51 characters, too many' in message
    assert f'such as "{"ab_" * 16}ab"' in message


@pytest.mark.parametrize("package", ["3d_tools", "weather-tools", "Weather", "_private", "a b"])
def test_non_identifier_package_is_refused(rendered: Render, package: str) -> None:
    assert f'"{package}" is not a valid import name' in refusal(rendered, package_name=package)


@pytest.mark.parametrize("package", ["class", "import", "async", "lambda"])
def test_keyword_package_is_refused(rendered: Render, package: str) -> None:
    assert f'"{package}" is a Python keyword' in refusal(rendered, package_name=package)


@pytest.mark.parametrize("package", ["mcp", "mcp_runtime", "pydantic", "langchain_core"])
def test_package_shadowing_a_dependency_is_refused(rendered: Render, package: str) -> None:
    message = refusal(rendered, package_name=package)
    assert f'"{package}" would shadow the "{package}" package the service depends on' in message


@pytest.mark.parametrize("package", ["json", "asyncio", "email", "typing", "tomllib"])
def test_package_shadowing_the_stdlib_is_refused(rendered: Render, package: str) -> None:
    message = refusal(rendered, package_name=package)
    assert f'"{package}" would shadow the standard library module "{package}"' in message


def test_a_refused_derived_package_name_says_which_answer_to_give(rendered: Render) -> None:
    assert refusal(rendered, project_name="Email").endswith(
        '"email" would shadow the standard library module "email": choose another name, '
        'such as "email_service" (answer package_name, or pass --data '
        "package_name=email_service to copier)."
    )


def test_empty_description_is_refused(rendered: Render) -> None:
    assert "The description cannot be empty" in refusal(rendered, description=" ")


def test_multiline_description_is_refused(rendered: Render) -> None:
    assert "must fit on one line" in refusal(rendered, description="one\ntwo")


def test_empty_author_is_refused(rendered: Render) -> None:
    assert "The author name cannot be empty" in refusal(rendered, author_name="")


@pytest.mark.parametrize("email", ["team", "team@", "@example.com", "a b@example.com", "x@y"])
def test_invalid_email_is_refused(rendered: Render, email: str) -> None:
    assert f'"{email}" is not an email address' in refusal(rendered, author_email=email)


def test_unsupported_python_is_refused(rendered: Render) -> None:
    with pytest.raises(ValueError, match="Invalid choice for 'python_version'"):
        rendered(python_version="3.10")


def test_new_services_verify_oauth_tokens_by_default(rendered: Render) -> None:
    service = rendered()
    assert answers_of(service)["auth"] == "oauth"
    defaults = (service / "src/mcp_runtime/config/service_defaults.py").read_text()
    assert 'AUTH = "oauth"' in defaults


@pytest.mark.parametrize("auth", ["demo-header", "none"])
def test_auth_answer_is_the_services_default(rendered: Render, auth: str) -> None:
    defaults = (rendered(auth=auth) / "src/mcp_runtime/config/service_defaults.py").read_text()
    assert f'AUTH = "{auth}"' in defaults


def test_unknown_auth_is_refused(rendered: Render) -> None:
    with pytest.raises(ValueError, match="Invalid choice for 'auth'"):
        rendered(auth="basic")


def test_refused_answers_write_nothing(rendered: Render, tmp_path: Path) -> None:
    refusal(rendered, package_name="json")
    assert not any((tmp_path / "service-1").rglob("*.py"))

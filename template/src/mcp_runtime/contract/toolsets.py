"""Find the service and its toolsets.

The service registers its toolsets package under the ``mcp_runtime.service``
entry-point group (in ``pyproject.toml``). Every public module of that package is
a toolset named after the module (``credential_demo`` serves as
``credential-demo``) and lists its LangChain tools in ``TOOLS``. Adding a toolset
is adding a module: no registration, no edit of any other file. A tool the module
defines but leaves out of ``TOOLS`` is not served; its toolset names it
(:attr:`Toolset.unlisted`), so that the server can warn of it.
"""

import importlib
import pkgutil
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import TypeGuard

from langchain_core.tools import BaseTool

__all__ = [
    "ENTRY_POINT_GROUP",
    "BrokenToolset",
    "Service",
    "ServiceNotFoundError",
    "Toolset",
    "find_service",
    "source_folder",
    "toolset_name",
]

ENTRY_POINT_GROUP = "mcp_runtime.service"


class ServiceNotFoundError(Exception):
    """No service (or more than one) is installed in the running environment."""


@dataclass(frozen=True)
class Toolset:
    """A module of the toolsets package and the tools it serves.

    ``unlisted`` names the public module attributes holding a tool the module defines
    but leaves out of ``TOOLS`` (a name starting with ``_`` keeps a tool unserved quietly).
    """

    name: str
    tools: tuple[BaseTool, ...]
    module: str = ""
    unlisted: tuple[str, ...] = ()

    def warnings(self) -> list[str]:
        """What the server warns of: each tool defined here that is not served."""
        return [
            f"toolset {self.name}: the tool `{attribute}` of {self.module} is not in its "
            f"TOOLS list, so it is not served: add it to TOOLS, or name it `_{attribute}` "
            "to keep it unserved"
            for attribute in self.unlisted
        ]


@dataclass(frozen=True)
class BrokenToolset:
    """A toolsets module that cannot serve: its import ``error``, or None for no ``TOOLS``."""

    name: str
    module: str
    error: Exception | None


@dataclass(frozen=True)
class Service:
    """The installed service: its name, the package its toolsets live in, and its version
    (its distribution's)."""

    name: str
    toolsets_package: str
    version: str = ""

    def load_toolsets(self) -> tuple[list[Toolset], list[BrokenToolset]]:
        """Import every toolset; a module that cannot serve is reported, not a crash."""
        return load_toolsets(self.toolsets_package)


def toolset_name(module: str) -> str:
    """The toolset a module of the toolsets package serves: ``weather_data`` is ``weather-data``."""
    return module.replace("_", "-")


def find_service() -> Service:
    """The one service registered in this environment's ``mcp_runtime.service`` group."""
    found = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda entry: entry.name)
    if not found:
        raise ServiceNotFoundError(
            "No MCP service is installed in this environment: run `uv sync` in the "
            "service's folder, then use `uv run` (the service registers itself under "
            f"the `{ENTRY_POINT_GROUP}` entry point in pyproject.toml)."
        )
    if len(found) > 1:
        names = ", ".join(entry.name for entry in found)
        raise ServiceNotFoundError(
            f"More than one MCP service is installed in this environment ({names}): "
            "serve each from its own environment."
        )
    entry = found[0]
    version = entry.dist.version if entry.dist is not None else ""
    return Service(name=entry.name, toolsets_package=entry.value, version=version)


def source_folder(service: Service) -> Path:
    """The folder that holds the service's top-level package: ``src/`` in its repository."""
    top = service.toolsets_package.split(".")[0]
    return Path(importlib.import_module(top).__path__[0]).resolve().parent


def load_toolsets(package: str) -> tuple[list[Toolset], list[BrokenToolset]]:
    """Import every public module of ``package`` and collect its ``TOOLS``."""
    root = importlib.import_module(package)
    toolsets: list[Toolset] = []
    broken: list[BrokenToolset] = []
    for info in sorted(pkgutil.iter_modules(root.__path__), key=lambda item: item.name):
        if info.name.startswith("_"):
            continue
        name, module_name = toolset_name(info.name), f"{package}.{info.name}"
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:
            broken.append(BrokenToolset(name, module_name, exc))
            continue
        tools = getattr(module, "TOOLS", None)
        if _is_tool_list(tools):
            unlisted = _unlisted_tools(vars(module), tools, module_name)
            toolsets.append(Toolset(name, tuple(tools), module_name, unlisted))
        else:
            broken.append(BrokenToolset(name, module_name, None))
    return toolsets, broken


def _is_tool_list(tools: object) -> TypeGuard[Sequence[BaseTool]]:
    return isinstance(tools, (list, tuple)) and all(isinstance(t, BaseTool) for t in tools)


def _unlisted_tools(
    namespace: dict[str, object], tools: Sequence[BaseTool], module: str
) -> tuple[str, ...]:
    """The public names in ``namespace`` of tools defined in ``module`` but not in ``tools``."""
    listed = {id(tool) for tool in tools}
    return tuple(
        sorted(
            name
            for name, value in namespace.items()
            if not name.startswith("_")
            and isinstance(value, BaseTool)
            and id(value) not in listed
            and _defined_in(value, module)
        )
    )


def _defined_in(tool: BaseTool, module: str) -> bool:
    """Whether ``tool`` was made in ``module`` (its function's, or its class's, module)."""
    function = getattr(tool, "func", None) or getattr(tool, "coroutine", None)
    return getattr(function, "__module__", type(tool).__module__) == module

"""Contract violations: what the startup gate reports, and the error that carries them."""

from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["ContractError", "ContractViolation"]


@dataclass(frozen=True)
class ContractViolation:
    """One broken rule: which tool (or whole toolset), which rule, and how to fix it;
    ``cause``, the exception behind it, when there is one (a toolset that cannot be
    imported), for a reader that shows its traceback."""

    tool: str | None
    toolset: str | None
    rule: str
    problem: str
    fix: str
    cause: BaseException | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        where = "/".join(part for part in (self.toolset, self.tool) if part)
        return f"{where}: [{self.rule}] {self.problem}\n    fix: {self.fix}"


class ContractError(Exception):
    """Raised when tools break the contract; lists every violation at once."""

    def __init__(self, violations: Iterable[ContractViolation]) -> None:
        self.violations = tuple(violations)
        count = len(self.violations)
        noun = "violation" if count == 1 else "violations"
        lines = [f"{count} tool contract {noun}:"]
        lines += [f"  - {violation}" for violation in self.violations]
        super().__init__("\n".join(lines))

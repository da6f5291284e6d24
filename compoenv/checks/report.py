"""The results of ``compoenv verify``: one CheckResult per check, gathered in a VerifyReport."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["CheckResult", "VerifyReport", "Findings"]


@dataclass(frozen=True)
class CheckResult:
    """One check's verdict on a service.

    Attributes:
        name: The check (``conventions``, ``schemas``, ``seeding``, ...).
        ok: Whether the service passed it.
        details: What failed, most telling first (tool, arguments, expected, got); notes
            that do not fail the check start with ``note:``.
        seconds: How long the check ran.
    """

    name: str
    ok: bool
    details: list[str]
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "details": list(self.details),
                "seconds": round(self.seconds, 3)}


@dataclass
class VerifyReport:
    """Every check's result for one service.

    Attributes:
        service: The service's name (or the file, when it did not load).
        target: What was verified, as given (a name, a class, a path).
        checks: The checks that ran, in order.
    """

    service: str
    target: str
    checks: list[CheckResult] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether every check passed."""
        return all(c.ok for c in self.checks)

    @property
    def failed(self) -> list[CheckResult]:
        return [c for c in self.checks if not c.ok]

    def to_json(self) -> dict[str, Any]:
        return {"service": self.service, "target": self.target, "ok": self.ok,
                "seconds": round(sum(c.seconds for c in self.checks), 3),
                "checks": [c.to_json() for c in self.checks]}

    def summary(self, details: int = 2) -> str:
        """One line per failed check with its first ``details`` details (what a coding model
        is told to fix), or one line saying every check passed."""
        if self.ok:
            return f"{self.service}: all {len(self.checks)} checks pass"
        lines = []
        for check in self.failed:
            shown = [d for d in check.details if not d.startswith("note:")][:details]
            more = len([d for d in check.details if not d.startswith("note:")]) - len(shown)
            text = "; ".join(shown) or "failed"
            lines.append(f"{check.name}: {text}" + (f" (+{more} more)" if more > 0 else ""))
        return "\n".join(lines)


class Findings:
    """What a check collects: problems fail it, notes are reported beside them."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.notes: list[str] = []

    def fail(self, message: str) -> None:
        self.problems.append(message)

    def note(self, message: str) -> None:
        self.notes.append(f"note: {message}")

    def result(self, name: str, seconds: float) -> CheckResult:
        return CheckResult(name, not self.problems, self.problems + self.notes, seconds)

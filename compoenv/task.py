"""Task and rubric criteria: JSON-serialisable data, with JSONL reading and writing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Annotated, Any, Iterable, Iterator, Literal, TypeVar, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

__all__ = [
    "MAX_WEIGHT", "MAX_CRITERIA", "MAX_VALUE_CHARS", "MAX_ALLOWED", "MAX_RIVALS", "Task", "Call", "Criterion", "StateCriterion", "AnswerCriterion", "CallCriterion",
    "UnchangedCriterion", "OrderCriterion", "HouseRule", "TaskFileError", "load_tasks", "iter_tasks", "iter_numbered_tasks",
    "save_tasks",
]


# Bounds on what a task file may ask of the reward (a task file is data from anywhere): a
# weight of Infinity, NaN or 1e308 would make the score NaN, and thousands of criteria or
# answer values of megabytes would stall every step that scores them. Composed tasks stay far
# below them (weights 0.5-1, a few dozen criteria, answer values of a few dozen characters).
MAX_WEIGHT = 100.0  # a criterion's weight: finite, 0 < weight <= MAX_WEIGHT
MAX_CRITERIA = 200  # criteria in one rubric
MAX_VALUE_CHARS = 1_000  # characters of one answer value (an answer criterion's, or Task.answer's)
MAX_RIVALS = 24  # an answer criterion's rival values, at most
MAX_ALLOWED = 50  # an answer criterion's ``allowed``: distinct values a reply may name


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Call(_Model):
    """One tool call: ``{"name": "<service>__<tool>", "arguments": {...}}``."""

    name: str
    arguments: dict[str, Any] = {}


class _Criterion(_Model):
    id: str
    description: str
    weight: float = Field(1.0, gt=0, le=MAX_WEIGHT, allow_inf_nan=False)
    required: bool = True


class StateCriterion(_Criterion):
    """A record exists (or not) in a collection of a service's final state, with these values.

    ``key`` pins one record (a modified one); without it any record of the collection the
    episode added or replaced may match (a created one, whose generated id the agent's order of
    calls decides). With ``changed``, the pinned record must also differ from its initial
    version (the request changes it, whatever values a simulated tool then chose).
    """

    kind: Literal["state"] = "state"
    service: str
    collection: str
    key: str | None = None
    match: dict[str, Any] = {}
    exists: bool = True
    changed: bool = False
    # a created record of its own: criteria of one collection with ``distinct`` each need
    # another record (the six logged calls of a fan-out are six records, not one)
    distinct: bool = False
    # the record still stands at the end: its status is not one that takes it back
    # (cancelled, deleted, void, ...; ``compoenv.reward.UNDONE``)
    standing: bool = False


class AnswerCriterion(_Criterion):
    """The final message reports ``value`` as the answer (``compoenv.answers``): the value is
    among the message's mentions of its ``value_kind``, and the message names at most
    ``allowed`` distinct values of that kind beside those the request states (defaults: the
    kind read from the value, and one plus that kind's slack)."""

    kind: Literal["answer"] = "answer"
    value: str = Field(min_length=1, max_length=MAX_VALUE_CHARS)
    value_kind: str | None = None
    allowed: int | None = Field(None, ge=1, le=MAX_ALLOWED)
    # the value is one a tool shows (an id, a price): reported only after a tool showed it in
    # this episode, so a guess passes nothing
    shown: bool = False
    # the same detail of the other candidates the job chose among (the other hotels' postal
    # codes when the cheapest hotel's is asked for): a report naming one hedges, and fails
    rivals: list[Annotated[str, Field(min_length=1, max_length=MAX_VALUE_CHARS)]] = Field(
        [], max_length=MAX_RIVALS)


class CallCriterion(_Criterion):
    """A tool was called successfully with (at least) these arguments. A required call
    criterion checks a write's arguments that no record shows."""

    kind: Literal["call"] = "call"
    name: str
    arguments: dict[str, Any] = {}
    distinct: bool = False  # a call of its own: ``distinct`` criteria of a tool need one each
    # facts the call's wording must carry (a message naming the hotel), in any of its text
    # arguments, whatever the rest of the wording
    mentions: list[Annotated[str, Field(min_length=1, max_length=MAX_VALUE_CHARS)]] = Field(
        [], max_length=8)
    # a message, not a placeholder: the wording arguments ``wording`` (a subject and a body)
    # hold at least this many words together, whatever they say
    min_words: int = Field(0, ge=0, le=200)
    wording: list[Annotated[str, Field(min_length=1, max_length=64)]] = Field([], max_length=8)


class UnchangedCriterion(_Criterion):
    """No collateral writes: records of a collection, other than ``except_keys``, are untouched
    and at most ``allow_new`` records were added. ``collection="*"`` guards every collection of
    the service but ``except_collections`` (those other criteria guard)."""

    kind: Literal["unchanged"] = "unchanged"
    service: str
    collection: str
    except_keys: list[str] = []
    allow_new: int = 0
    except_collections: list[str] = []
    # when set, only these records are guarded (a decoy left alone): they must be unchanged,
    # and no successful write may name them in its arguments
    keys: list[str] = []
    # when set, a successful write of the service may name (by a key parameter) only these
    # records or ones the episode created: a write the world accepted on another record is
    # collateral damage even where the state does not show it
    acts_on: list[str] | None = None


class OrderCriterion(_Criterion):
    """A call to ``first`` (with at least these arguments) succeeded before the first
    successful call to ``then``, and ``then`` was called: an ordering house rule ("re-check the
    invoice before any money moves")."""

    kind: Literal["order"] = "order"
    first: Call
    then: str
    # with these, ``then`` is the call with (at least) these arguments: the payment a sign-off
    # is for, not the first payment of the episode
    then_arguments: dict[str, Any] | None = None


Criterion = Annotated[
    Union[StateCriterion, AnswerCriterion, CallCriterion, UnchangedCriterion, OrderCriterion],
    Field(discriminator="kind"),
]


class Replace(_Model):
    """Solution call ``call`` made with ``arguments`` instead."""

    call: int = Field(ge=0)
    arguments: dict[str, Any] = {}


class RuleChange(_Model):
    """How a solution that ignores a house rule differs from the oracle: the calls it leaves
    out (by solution index) and the calls it makes with other arguments."""

    drop: list[int] = []
    replace: list[Replace] = []


class HouseRule(_Model):
    """A standing rule the request opens with, and the criteria that check it.

    ``without`` (None for a never-do rule, which adds no step) is the solution with the rule
    ignored; verification requires it to fail at least one of the rule's criteria.
    """

    id: str
    kind: Literal["naming", "source_of_truth", "threshold", "ordering", "never"]
    text: str
    criteria: list[str] = []
    without: RuleChange | None = None


class Task(_Model):
    """A composed, verified task. Field names are the public contract (see docs/architecture.md).

    ``seed`` is the seed of the task's World (many tasks share a world); ``walk_seed`` is the
    seed of the random walk that composed it, so ``Composer.compose(walk_seed)`` regenerates it.
    """

    id: str = ""
    instruction: str
    services: list[str] = Field(min_length=1)
    distractors: list[str] = []
    seed: int = Field(ge=0, lt=2**31)
    date: str
    solution: list[Call]
    answer: list[Annotated[str, Field(max_length=MAX_VALUE_CHARS)]] = Field(
        [], max_length=MAX_CRITERIA)
    rubric: list[Criterion] = Field(max_length=MAX_CRITERIA)
    capabilities: list[str] = []
    domain: str
    hops: int
    recorded: dict[str, Any] = {}
    fingerprint: dict[str, str] = {}
    walk_seed: int | None = Field(None, ge=0, lt=2**31)
    scenario: str | None = None
    difficulty: float | None = Field(None, ge=0, le=1)
    rules: list[HouseRule] = []
    # how much of the plan the request gives away: "goal" (what to achieve, the facts and
    # rules), "hints" (and a lookup or two), "steps" (every call in order, for curricula)
    guidance: Literal["goal", "hints", "steps"] = "steps"

    @field_validator("instruction")
    @classmethod
    def _neutral_instruction(cls, value: str) -> str:
        """No chat-template control token or tool-call tag in a request shown to a model."""
        from compoenv.untrusted import neutralise

        return neutralise(value)

    @field_validator("date")
    @classmethod
    def _iso_date(cls, value: str) -> str:
        import datetime as dt

        try:
            dt.date.fromisoformat(value)
        except ValueError:
            raise ValueError(f"date must be an ISO date such as 2026-03-16, got {value!r}") \
                from None
        if len(value) != 10:
            raise ValueError(f"date must be YYYY-MM-DD, got {value!r}")
        return value

    def today(self) -> Any:
        """The task's date as a ``datetime.date`` (its World's "today")."""
        import datetime as dt

        return dt.date.fromisoformat(self.date)

    def content_hash(self) -> str:
        """A hash of everything but ``id``: equal tasks, equal hashes."""
        body = self.model_dump(mode="json", exclude={"id"})
        for key in _LATER:  # fields added later hash as before while unset: ids stay stable
            if body.get(key) in (None, []):
                del body[key]
        blob = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return "t-" + hashlib.sha256(blob.encode()).hexdigest()[:16]

    def job_key(self) -> str:
        """What the agent has to do: the world, the calls and the values to report. Two tasks
        that differ only in their distractors, walk seed or the persona their request opens
        with are one job (a set keeps one)."""
        body = {"seed": self.seed, "date": self.date, "answer": self.answer,
                "solution": [c.model_dump(mode="json") for c in self.solution]}
        blob = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def with_id(self) -> Task:
        return self.model_copy(update={"id": self.content_hash()})

    def to_json(self) -> str:
        return self.model_dump_json()

    @classmethod
    def coerce(cls, value: Task | dict[str, Any] | str) -> Task:
        """A Task from a Task, a dict, or a JSON string."""
        if isinstance(value, Task):
            return value
        if isinstance(value, str):
            return cls.model_validate_json(value)
        return cls.model_validate(value)


_LATER = ("scenario", "difficulty", "rules")


class TaskFileError(ValueError):
    """A task file line that is not valid JSON or not a valid Task."""


M = TypeVar("M", bound=BaseModel)


def iter_jsonl(path: str | Path, model: type[M], error: type[ValueError],
               numbered: bool = False) -> Iterator[Any]:
    """``model`` records of a JSONL file, one per non-blank line (``(line, record)`` pairs
    with ``numbered``).

    Raises:
        error: The file cannot be read as UTF-8 text, or a line is not JSON or not a valid
            record; the message names the file, the line and the first bad field.
    """
    path = Path(path)
    if path.is_dir():
        raise error(f"{path}: is a directory; expected a JSONL file (one JSON object per line)")
    try:
        fh = open(path, encoding="utf-8")
    except OSError as exc:
        raise error(f"{path}: cannot open: {exc.strerror or exc}") from None
    with fh:
        lineno = 0
        try:
            for lineno, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    record = model.model_validate_json(line)
                except ValidationError as exc:
                    first = exc.errors(include_url=False)[0]
                    where = ".".join(str(p) for p in first["loc"]) or "(root)"
                    kind = ("invalid JSON" if first["type"] == "json_invalid"
                            else f"field {where!r}")
                    raise error(f"{path}:{lineno}: {kind}: {first['msg']}"
                                f" ({exc.error_count()} error(s) on this line)") from None
                yield (lineno, record) if numbered else record
        except UnicodeDecodeError:
            raise error(f"{path}:{lineno + 1}: not UTF-8 text; expected a JSONL file "
                        f"(is it binary or compressed?)") from None


def iter_tasks(path: str | Path) -> Iterator[Task]:
    """Tasks of a JSONL file, one per non-blank line; errors name the file, line and field.

    The tasks are not checked against a library: ``compoenv.task_check.load_checked`` does that
    (the env and the CLI load task files through it)."""
    return iter_jsonl(path, Task, TaskFileError)


def iter_numbered_tasks(path: str | Path) -> Iterator[tuple[int, Task]]:
    """``(line number, task)`` pairs of a JSONL task file."""
    return iter_jsonl(path, Task, TaskFileError, numbered=True)


def load_tasks(path: str | Path) -> list[Task]:
    return list(iter_tasks(path))


def save_tasks(tasks: Iterable[Task], path: str | Path) -> int:
    """Write tasks as JSONL; returns how many were written."""
    count = 0
    with open(path, "w", encoding="utf-8") as fh:
        for task in tasks:
            fh.write(task.to_json() + "\n")
            count += 1
    return count

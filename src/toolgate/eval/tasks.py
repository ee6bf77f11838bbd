"""The tasks file of ``toolgate eval``: what an agent is asked, and how success is judged.

A YAML or JSON file, read as the gateway reads its config and validated with pydantic;
a problem is a ``ConfigError`` naming the task and the key. ``judge`` decides one run:
the tools that had to be called (with argument checks), the final answer's pattern, a
check command. Edge (``toolgate.eval``): imports the error hierarchy and the gateway's
file reader only.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from toolgate.errors import ConfigError
from toolgate.gateway.config.files import parse_json, read_text

DEFAULT_MAX_TURNS = 10
CHECK_TIMEOUT_S = 60.0


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _regex(value: str) -> str:
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"{value!r} is not a valid regular expression: {exc}") from None
    return value


class ArgumentCheck(_Model):
    """One argument of a required call: ``equals`` a JSON value, or (as text) matches
    ``pattern`` (``re.search``)."""

    equals: Any = None
    pattern: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _one_kind(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            kinds = [k for k in ("equals", "pattern") if k in data]
            if len(kinds) != 1:
                raise ValueError("give exactly one of 'equals' or 'pattern'")
        return data

    @field_validator("pattern")
    @classmethod
    def _valid_pattern(cls, v: str | None) -> str | None:
        return None if v is None else _regex(v)

    def holds(self, value: Any, present: bool) -> bool:
        if not present:
            return False
        if self.pattern is not None:
            text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
            return re.search(self.pattern, text) is not None
        return bool(value == self.equals)


class RequiredCall(_Model):
    """A tool the agent must call successfully, by its MCP name, with ``args`` checks."""

    tool: str = Field(min_length=1)
    args: dict[str, ArgumentCheck] = Field(default_factory=dict)


class Expect(_Model):
    """How success is judged; every criterion given must hold."""

    calls: list[RequiredCall] = Field(default_factory=list)
    answer: str | None = None
    check: str | None = None

    @field_validator("answer")
    @classmethod
    def _valid_answer(cls, v: str | None) -> str | None:
        return None if v is None else _regex(v)

    @model_validator(mode="after")
    def _something(self) -> Expect:
        if not self.calls and self.answer is None and self.check is None:
            raise ValueError("say how success is judged: 'calls', 'answer' or 'check'")
        return self


class TaskSpec(_Model):
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    prompt: str = Field(min_length=1)
    expect: Expect
    # strict: YAML's `max_turns: yes` or `relist: 1` is a mistake, not a 1 or a True
    max_turns: int | None = Field(None, ge=1, le=100, strict=True)
    relist: bool | None = Field(None, strict=True)


class TaskFile(_Model):
    system: str | None = None
    max_turns: int = Field(DEFAULT_MAX_TURNS, ge=1, le=100, strict=True)
    relist: bool = Field(True, strict=True)
    tasks: list[TaskSpec] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> TaskFile:
        seen: set[str] = set()
        for task in self.tasks:
            if task.name in seen:
                raise ValueError(f"two tasks are named {task.name!r}")
            seen.add(task.name)
        return self


@dataclass(frozen=True)
class Task:
    """One task as the agent loop runs it (the file's defaults applied)."""

    name: str
    prompt: str
    expect: Expect
    max_turns: int
    relist: bool
    system: str | None


@dataclass(frozen=True)
class CallRecord:
    """A tool call as the host ran it: the MCP tool reached (through a dispatcher
    meta-tool too), its arguments, and whether it was refused or failed."""

    name: str  # what the model called (its exported name)
    tool: str  # the MCP tool that ran, or was asked for
    arguments: Mapping[str, Any]
    refused: bool
    failed: bool

    @property
    def succeeded(self) -> bool:
        return not (self.refused or self.failed)


@dataclass(frozen=True)
class Verdict:
    success: bool
    reasons: tuple[str, ...]  # why it failed (empty when it succeeded)


def _where(loc: Sequence[int | str], data: Any) -> str:
    """``task 'x' (tasks[2]): expect.calls[0].tool`` for pydantic's error location."""
    parts = list(loc)
    prefix = ""
    if len(parts) >= 2 and parts[0] == "tasks" and isinstance(parts[1], int):
        index = parts[1]
        name = None
        tasks = data.get("tasks") if isinstance(data, Mapping) else None
        if isinstance(tasks, list) and index < len(tasks) and isinstance(tasks[index], Mapping):
            name = tasks[index].get("name")
        prefix = f"task {name!r} (tasks[{index}])" if name else f"tasks[{index}]"
        parts = parts[2:]
    key = ""
    for p in parts:
        key += f"[{p}]" if isinstance(p, int) else (f".{p}" if key else str(p))
    if prefix and key:
        return f"{prefix}: {key}"
    return prefix or key or "(top level)"


def parse_tasks(data: Any, *, source: str = "tasks") -> list[Task]:
    """Validate a tasks mapping; one ``ConfigError`` lists every problem, by task and key."""
    if isinstance(data, list):
        data = {"tasks": data}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source}: the tasks file must be an object with 'tasks'", key="(file)")
    try:
        parsed = TaskFile.model_validate(data)
    except ValidationError as exc:
        lines = [
            f"{source}: {_where(e['loc'], data)}: {e['msg']}" for e in exc.errors(include_url=False)
        ]
        raise ConfigError("\n".join(lines), key="tasks") from None
    return [
        Task(
            name=t.name,
            prompt=t.prompt,
            expect=t.expect,
            max_turns=t.max_turns or parsed.max_turns,
            relist=parsed.relist if t.relist is None else t.relist,
            system=parsed.system,
        )
        for t in parsed.tasks
    ]


def _yaml_data(text: str, label: str) -> Any:
    """YAML text as data, read as toolgate reads a config: a key written twice in one
    mapping and nesting that would exhaust the parser's stack refused."""
    import yaml

    class Loader(yaml.SafeLoader):
        def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> Any:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue  # '<<' keys may repeat what they merge: that is their point
                key = self.construct_object(key_node, deep=deep)
                if isinstance(key, Hashable):
                    if key in seen:
                        line = key_node.start_mark.line + 1
                        raise ConfigError(
                            f"{label}: line {line}: key {key!r} appears twice", key="(file)"
                        )
                    seen.add(key)
            return super().construct_mapping(node, deep=deep)

    try:
        return yaml.load(text, Loader=Loader)  # a SafeLoader: no Python objects
    except RecursionError:
        raise ConfigError(f"{label}: nested too deep to read", key="(file)") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{label}: not valid YAML: {exc}", key="(file)") from None


def load_tasks(path: str | Path) -> list[Task]:
    """Read a ``.yaml`` / ``.yml`` or ``.json`` tasks file (UTF-8; a key written twice
    is refused, not silently replaced by its second value)."""
    p = Path(path)
    text = read_text(p, "the tasks file")
    if p.suffix.lower() in (".yaml", ".yml"):
        data = _yaml_data(text, str(p))
    else:
        data = parse_json(text, str(p))
    return parse_tasks(data, source=str(p))


def judge(
    task: Task,
    calls: Sequence[CallRecord],
    answer: str | None,
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Verdict:
    """Did this run succeed? Every required call has a successful call of its tool whose
    arguments pass every check; the answer matches; the check command exits 0 (it runs
    in a shell with ``TOOLGATE_EVAL_ANSWER`` and ``TOOLGATE_EVAL_CALLS`` set)."""
    reasons: list[str] = []
    for required in task.expect.calls:
        if not any(
            c.tool == required.tool
            and c.succeeded
            and all(
                check.holds(c.arguments.get(arg), arg in c.arguments)
                for arg, check in required.args.items()
            )
            for c in calls
        ):
            called = [c for c in calls if c.tool == required.tool]
            reasons.append(
                f"{required.tool} was not called"
                if not called
                else f"no successful call of {required.tool} passed the argument checks"
            )
    if task.expect.answer is not None and (
        answer is None or re.search(task.expect.answer, answer) is None
    ):
        reasons.append(f"the final answer does not match {task.expect.answer!r}")
    if task.expect.check is not None:
        calls_json = json.dumps(
            [{"tool": c.tool, "arguments": dict(c.arguments), "ok": c.succeeded} for c in calls],
            default=str,
        )
        check_env = {
            **os.environ,
            **(env or {}),
            "TOOLGATE_EVAL_ANSWER": answer or "",
            "TOOLGATE_EVAL_CALLS": calls_json,
        }
        try:
            done = subprocess.run(
                task.expect.check,
                shell=True,
                env=check_env,
                cwd=cwd,
                capture_output=True,
                timeout=CHECK_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            reasons.append(f"the check command ran over {CHECK_TIMEOUT_S:.0f} s")
        else:
            if done.returncode != 0:
                reasons.append(f"the check command exited {done.returncode}")
    return Verdict(success=not reasons, reasons=tuple(reasons))

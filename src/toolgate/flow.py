"""Stages: where a session is in a flow, and which tools each stage allows.

One concept for the tool-management seed's "progression" and TrustGraph's "state":
a flow has an ``initial`` stage and stages with ``enables`` (further stages whose
tools stay available) and ``transitions`` (``on`` tool → ``to`` stage). Pure; core.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolgate.errors import ConfigError

UNDEFINED = "undefined"


def _stage_name(value: Any, where: str, key: str) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where} must be a non-empty string, got {value!r:.80}", key=key)
    return value


def _items(value: Any, where: str, key: str, what: str) -> tuple[Any, ...]:
    """``value`` as a tuple; a string or a single value is refused, not read as a list."""
    if isinstance(value, str | Mapping | Stage | Transition) or not isinstance(value, Iterable):
        raise ConfigError(f"{where} must be a list of {what}, got {value!r:.80}", key=key)
    return tuple(value)


@dataclass(frozen=True)
class Transition:
    on: str
    to: str

    def __post_init__(self) -> None:
        if not isinstance(self.on, str) or not self.on:
            raise ConfigError(
                f"A transition's on must be a tool name, got {self.on!r:.80}",
                key="stages.transitions",
            )
        _stage_name(self.to, f"The transition on {self.on!r}: to", "stages.transitions")


@dataclass(frozen=True)
class Stage:
    name: str
    enables: tuple[str, ...] = ()
    transitions: tuple[Transition, ...] = ()

    def __post_init__(self) -> None:
        _stage_name(self.name, "A stage's name", "stages")
        where = f"Stage {self.name!r}"
        enables = _items(self.enables, f"{where}: enables", "stages.enables", "stage names")
        for e in enables:
            _stage_name(e, f"{where}: each stage it enables", "stages.enables")
        transitions = _items(
            self.transitions, f"{where}: transitions", "stages.transitions", "Transition(on, to)"
        )
        for t in transitions:
            if not isinstance(t, Transition):
                raise ConfigError(
                    f"{where}: transitions must be Transition(on, to) values, got {t!r:.80}",
                    key="stages.transitions",
                )
        object.__setattr__(self, "enables", enables)
        object.__setattr__(self, "transitions", transitions)


@dataclass(frozen=True)
class Flow:
    """The stage graph. ``Flow()`` has one stage, ``"undefined"``, which allows all tools."""

    initial: str = UNDEFINED
    stages: tuple[Stage, ...] = ()
    _by_name: Mapping[str, Stage] = field(default_factory=dict, init=False, repr=False)
    _triggers: frozenset[str] = field(default=frozenset(), init=False, repr=False)

    def __post_init__(self) -> None:
        _stage_name(self.initial, "The flow's initial stage", "stages.initial")
        stages = _items(self.stages, "The flow's stages", "stages.stages", "Stage values")
        for s in stages:
            if not isinstance(s, Stage):
                raise ConfigError(
                    f"The flow's stages must be Stage values, got {s!r:.80}", key="stages.stages"
                )
        if not any(s.name == self.initial for s in stages):
            stages = (Stage(self.initial), *stages)
        by_name: dict[str, Stage] = {}
        for s in stages:
            if s.name in by_name:
                raise ConfigError(f"Duplicate stage {s.name!r}", key="stages")
            by_name[s.name] = s
        for s in stages:
            for e in s.enables:
                if e not in by_name:
                    raise ConfigError(
                        f"Stage {s.name!r} enables unknown stage {e!r}", key="stages.enables"
                    )
            for t in s.transitions:
                if t.to not in by_name:
                    raise ConfigError(
                        f"Stage {s.name!r} transitions to unknown stage {t.to!r}",
                        key="stages.transitions",
                    )
        object.__setattr__(self, "stages", stages)
        object.__setattr__(self, "_by_name", by_name)
        triggers = frozenset(t.on for s in stages for t in s.transitions)
        object.__setattr__(self, "_triggers", triggers)

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self._by_name)

    def has(self, name: str) -> bool:
        return name in self._by_name

    def check(self, name: str, *, where: str) -> str:
        if name not in self._by_name:
            raise ConfigError(
                f"Unknown stage {name!r} in {where}; "
                f"known stages: {', '.join(sorted(self._by_name))}",
                key=where,
            )
        return name

    def current(self, stage: str | None) -> str:
        """The stage a session is in: ``initial`` before it moved, and also when the
        stage it moved to is no longer in the flow (the flow was replaced, a reload)."""
        return stage if stage is not None and stage in self._by_name else self.initial

    def allowed_stages(self, stage: str) -> frozenset[str]:
        """The stage itself plus the stages it enables."""
        s = self._by_name.get(stage)
        return frozenset((stage, *(s.enables if s else ())))

    def allows(self, tool_stages: frozenset[str] | None, stage: str) -> bool:
        if tool_stages is None:
            return True
        return not tool_stages.isdisjoint(self.allowed_stages(stage))

    def next_stage(self, stage: str, tool: str, tool_next: str | None) -> str | None:
        """Where a successful call of ``tool`` leads from ``stage``: the stage's own
        transition on that tool first, else the tool's ``next_stage``, else nowhere."""
        s = self._by_name.get(stage)
        if s is not None:
            for t in s.transitions:
                if t.on == tool:
                    return t.to
        return tool_next

    def moves_on(self, tool: str, tool_next: str | None) -> bool:
        """Whether a successful call of ``tool`` can lead anywhere from some stage: its
        own ``next_stage``, or a transition on it."""
        return tool_next is not None or tool in self._triggers

    def transition_triggers(self) -> Iterable[str]:
        for s in self.stages:
            for t in s.transitions:
                yield t.on

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> Flow:
        """A Flow from config: ``{"initial": ..., "stages": [{name, enables, transitions}]}``."""
        if not isinstance(data, Mapping):
            raise ConfigError("stages must be an object with 'initial' and 'stages'", key="stages")
        raw: Sequence[Any] = data.get("stages", [])
        if not isinstance(raw, Sequence) or isinstance(raw, str):
            raise ConfigError("stages.stages must be a list", key="stages.stages")
        stages = []
        for i, item in enumerate(raw):
            if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
                raise ConfigError(
                    f"stages.stages[{i}] must be an object with a name", key=f"stages.stages[{i}]"
                )
            transitions = []
            for j, t in enumerate(item.get("transitions", [])):
                if not isinstance(t, Mapping) or not {"on", "to"} <= set(t):
                    raise ConfigError(
                        f"stages.stages[{i}].transitions[{j}] needs 'on' and 'to'",
                        key=f"stages.stages[{i}].transitions[{j}]",
                    )
                transitions.append(Transition(on=str(t["on"]), to=str(t["to"])))
            stages.append(
                Stage(
                    name=item["name"],
                    enables=item.get("enables", ()),
                    transitions=tuple(transitions),
                )
            )
        return cls(initial=str(data.get("initial", UNDEFINED)), stages=tuple(stages))

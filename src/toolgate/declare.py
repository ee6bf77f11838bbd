"""Declaring tools and groups in Python.

Three forms, one result (``Group`` and ``Tool`` values for the catalog): plain
functions (``@tool(groups=[...])``), group classes (``@group`` with ``@tool`` methods
and ``@subgroup`` child-group methods, after the tmcp seed's derive macros), and the
wags-style stackable ``@in_group`` on handler-class methods. Schemas come from type
hints through pydantic. Model layer: no MCP imports.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, get_type_hints

import pydantic

from toolgate.catalog import (
    ALWAYS,
    BY_GROUP,
    CallContext,
    Group,
    Hook,
    Tool,
    ToolDoc,
    Visibility,
)
from toolgate.catalog.tool import name_list
from toolgate.errors import RegistrationError, described
from toolgate.policy import DEFAULT_POLICY, Policy

TOOL_MARK = "__toolgate_tool__"
GROUPS_MARK = "__toolgate_groups__"
SUBGROUP_MARK = "__toolgate_subgroup__"
GROUP_MARK = "__toolgate_group__"


def snake_case(name: str) -> str:
    s = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", s)
    return s.replace("-", "_").lower()


@dataclass(frozen=True)
class ToolOptions:
    name: str | None = None
    description: str | None = None
    title: str | None = None
    summary: str | None = None
    groups: tuple[str, ...] = ()
    always: bool = False
    visibility: Visibility | None = None
    annotations: Mapping[str, Any] | None = None
    policy: Policy = DEFAULT_POLICY
    stages: Sequence[str] | None = None
    next_stage: str | None = None
    output_schema: Mapping[str, Any] | None = None
    doc: ToolDoc | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "groups", name_list(self.groups, "groups", "@tool"))
        if self.stages is not None:
            object.__setattr__(self, "stages", name_list(self.stages, "stages", "@tool"))


def _options(cls: type[Any], options: Mapping[str, Any], decorator: str) -> Any:
    """``cls(**options)``; an option ``cls`` does not know is refused, naming the ones
    it does (a typo would otherwise be a TypeError from deep inside)."""
    known = [f.name for f in fields(cls)]
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise RegistrationError(
            f"{decorator} has no option {', '.join(map(repr, unknown))}; its options: "
            f"{', '.join(known)}"
        )
    return cls(**options)


def tool(fn: Callable[..., Any] | None = None, /, **options: Any) -> Any:
    """Mark a function or method as a tool. Use bare (``@tool``) or with options
    (``@tool(always=True)``, ``@tool(groups=["files"], policy=Policy(min_trust="verified"))``).
    """

    opts: ToolOptions = _options(ToolOptions, options, "@tool")

    def mark(f: Callable[..., Any]) -> Callable[..., Any]:
        setattr(f, TOOL_MARK, opts)  # frozen: one ``@tool(...)`` may mark several functions
        return f

    return mark(fn) if fn is not None else mark


def in_group(*group_names: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Put a handler method in one or more groups (stackable, as in wags)."""

    if not group_names or not all(isinstance(n, str) for n in group_names):
        raise RegistrationError(
            "in_group takes one or more group names, one per argument: "
            f"in_group('files', 'admin'); got {list(group_names)!r:.80}"
        )

    def mark(f: Callable[..., Any]) -> Callable[..., Any]:
        existing: tuple[str, ...] = getattr(f, GROUPS_MARK, ())
        setattr(f, GROUPS_MARK, tuple(dict.fromkeys((*group_names, *existing))))
        return f

    return mark


def subgroup(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a method of a group class that returns a child group instance."""
    setattr(fn, SUBGROUP_MARK, True)
    return fn


@dataclass(frozen=True)
class GroupOptions:
    name: str | None = None
    description: str = ""
    title: str | None = None
    instructions: str | None = None
    show_deactivator: bool = True
    on_activate: str | Hook | None = None
    on_deactivate: str | Hook | None = None
    exclusive: tuple[tuple[str, ...], ...] = field(default=())


def group(cls: type | None = None, /, **options: Any) -> Any:
    """Class decorator declaring a group: its ``@tool`` methods are its tools and its
    ``@subgroup`` methods return child groups. The name defaults to the snake-cased
    class name; ``on_activate``/``on_deactivate`` may name methods of the class."""

    rest = dict(options)
    sets = rest.pop("exclusive", ())
    if isinstance(sets, str) or not isinstance(sets, Sequence):
        sets = [sets]  # refused below, with the example
    exclusive = []
    for x in sets:
        if (
            isinstance(x, str)
            or not isinstance(x, Sequence)
            or not all(isinstance(n, str) for n in x)
        ):
            raise RegistrationError(
                "@group exclusive is a list of exclusion sets, each a list of group names: "
                f"exclusive=[['drafts', 'published']]; got {options['exclusive']!r:.80}"
            )
        exclusive.append(tuple(x))
    opts: GroupOptions = _options(GroupOptions, {**rest, "exclusive": tuple(exclusive)}, "@group")

    def mark(c: type) -> type:
        setattr(c, GROUP_MARK, opts)
        return c

    return mark(cls) if cls is not None else mark


def _params(fn: Callable[..., Any]) -> tuple[list[inspect.Parameter], str | None, dict[str, Any]]:
    sig = inspect.signature(fn)
    try:
        hints = get_type_hints(fn, include_extras=True)
    except Exception as exc:
        raise RegistrationError(f"Cannot read the type hints of {fn.__qualname__}: {exc}") from exc
    params = []
    ctx_param = None
    for p in sig.parameters.values():
        if p.name == "self" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if hints.get(p.name) is CallContext:
            ctx_param = p.name
            continue
        params.append(p)
    return params, ctx_param, hints


def _input_model(fn: Callable[..., Any], name: str) -> tuple[type[pydantic.BaseModel], str | None]:
    params, ctx_param, hints = _params(fn)
    fields: dict[str, Any] = {}
    for p in params:
        annotation = hints.get(p.name, Any)
        default = ... if p.default is inspect.Parameter.empty else p.default
        fields[p.name] = (annotation, default)
    try:
        model = pydantic.create_model(
            f"{name}_arguments",
            __config__=pydantic.ConfigDict(arbitrary_types_allowed=False),
            **fields,
        )
    except Exception as exc:
        raise RegistrationError(f"Tool {name!r}: cannot build an input schema: {exc}") from exc
    return model, ctx_param


def _schema(model: type[pydantic.BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)
    schema.setdefault("properties", {})
    return schema


def tool_from_function(
    fn: Callable[..., Any],
    *,
    group_name: str | None = None,
    base_name: str | None = None,
    **options: Any,
) -> Tool:
    """Build a ``Tool`` from a (bound) function: schema from its type hints, description
    from its docstring, options from ``@tool`` marks overridden by ``options``."""
    if not callable(fn):
        raise RegistrationError(f"A tool is made from a function; got {described(fn)}")
    marked: ToolOptions = getattr(fn, TOOL_MARK, None) or ToolOptions()
    if options.get("groups", ()) is None:
        del options["groups"]  # None: the groups the marks give
    opts: ToolOptions = _options(ToolOptions, {**marked.__dict__, **options}, "tool")
    name = opts.name or base_name or fn.__name__
    model, ctx_param = _input_model(fn, name)
    description = opts.description if opts.description is not None else inspect.getdoc(fn) or ""
    mark_groups: tuple[str, ...] = getattr(fn, GROUPS_MARK, ())
    all_groups = tuple(
        dict.fromkeys((*((group_name,) if group_name else ()), *opts.groups, *mark_groups))
    )
    visibility = opts.visibility or (ALWAYS if opts.always else BY_GROUP)
    is_async = inspect.iscoroutinefunction(fn)

    async def handler(arguments: Mapping[str, Any], ctx: CallContext) -> Any:
        try:
            parsed = model.model_validate(dict(arguments))
        except pydantic.ValidationError as exc:
            raise ValueError(f"invalid arguments: {exc.errors(include_url=False)}") from None
        kwargs = {k: getattr(parsed, k) for k in type(parsed).model_fields}
        if ctx_param is not None:
            kwargs[ctx_param] = ctx
        if is_async:
            return await fn(**kwargs)
        return fn(**kwargs)

    return Tool(
        name=name,
        description=description,
        handler=handler,
        input_schema=_schema(model),
        title=opts.title,
        summary=opts.summary,
        output_schema=opts.output_schema,
        annotations=opts.annotations,
        groups=all_groups,
        visibility=visibility,
        policy=opts.policy,
        stages=frozenset(opts.stages) if opts.stages is not None else None,
        next_stage=opts.next_stage,
        doc=opts.doc,
    )


def _hook(obj: Any, hook: str | Hook | None) -> Hook | None:
    if hook is None or callable(hook):
        return hook
    if not isinstance(hook, str):
        raise RegistrationError(
            f"{type(obj).__name__}: a hook is a function or the name of a method, got "
            f"{described(hook)}"
        )
    method = getattr(obj, hook, None)
    if method is None or not callable(method):
        raise RegistrationError(f"{type(obj).__name__} has no hook method {hook!r}")
    h: Hook = method
    return h


def declarations_of(
    obj: Any,
    *,
    parent: str | None = None,
    namespace: bool = False,
    separator: str = ".",
    path: str | None = None,
) -> tuple[list[Group], list[Tool], list[tuple[str, ...]]]:
    """The groups, tools and exclusion sets an object declares.

    A ``@group`` instance yields itself, its tools and (recursively) its subgroups; any
    other object yields its ``@tool`` / ``@in_group`` methods (groups registered elsewhere).
    """
    gopts: GroupOptions | None = getattr(type(obj), GROUP_MARK, None)
    groups: list[Group] = []
    tools: list[Tool] = []
    exclusions: list[tuple[str, ...]] = []
    gname: str | None = None
    if gopts is not None:
        gname = gopts.name or snake_case(type(obj).__name__)
        groups.append(
            Group(
                name=gname,
                description=gopts.description or (inspect.getdoc(type(obj)) or "").strip(),
                title=gopts.title,
                parent=parent,
                instructions=gopts.instructions,
                show_deactivator=gopts.show_deactivator,
                on_activate=_hook(obj, gopts.on_activate),
                on_deactivate=_hook(obj, gopts.on_deactivate),
            )
        )
        exclusions.extend(gopts.exclusive)
        path = gname if path is None else f"{path}{separator}{gname}"
    for attr in sorted(dir(type(obj))):
        if attr.startswith("__"):
            continue
        raw = getattr(type(obj), attr, None)
        if raw is None or not callable(raw):
            continue
        method = getattr(obj, attr)
        if getattr(raw, SUBGROUP_MARK, False):
            child = method()
            if getattr(type(child), GROUP_MARK, None) is None:
                raise RegistrationError(
                    f"{type(obj).__name__}.{attr} is a @subgroup but returned a "
                    f"{type(child).__name__}, which is not a @group class"
                )
            g, t, e = declarations_of(
                child, parent=gname, namespace=namespace, separator=separator, path=path
            )
            groups += g
            tools += t
            exclusions += e
            continue
        marked = getattr(raw, TOOL_MARK, None)
        in_groups = getattr(raw, GROUPS_MARK, None)
        if marked is None and in_groups is None:
            continue
        base = (marked.name if marked and marked.name else None) or attr
        name = f"{path}{separator}{base}" if namespace and path else base
        tools.append(tool_from_function(method, group_name=gname, base_name=base, name=name))
    return groups, tools, exclusions

"""Long-form tool documentation for lazy descriptions: load, validate, derive, cache.

Reads a folder of ``<tool>.json`` files (the progressive-disclosure seed's format),
rejects a malformed file at start-up with a ``ConfigError`` naming the file and the
field, and builds each tool's full description from its file or from the tool itself.
Model layer: imports ``toolgate.catalog`` and ``toolgate.errors`` only, never MCP.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolgate.catalog import Catalog, Tool, ToolDoc
from toolgate.catalog.tool import TOOL_NAME
from toolgate.errors import ConfigError

#: Every key a doc file may hold; anything else is a typo worth failing on.
DOC_KEYS = (
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
    "examples",
    "usage_guidance",
    "error_guidance",
)
EXAMPLE_KEYS = ("description", "input", "explanation", "output")
ERROR_KEYS = ("error", "cause", "solution")


@dataclass(frozen=True)
class DocFile:
    """One validated ``<tool>.json`` file. ``None`` fields fall back to the tool's own."""

    name: str
    path: Path
    title: str | None = None
    description: str | None = None
    input_schema: Mapping[str, Any] | None = None
    output_schema: Mapping[str, Any] | None = None
    annotations: Mapping[str, Any] | None = None
    doc: ToolDoc = field(default_factory=ToolDoc)


def _fail(path: Path, where: str, problem: str) -> ConfigError:
    return ConfigError(
        f"Tool description file {path}: field {where!r} {problem}",
        key=where,
        path=str(path),
    )


def _string(data: Mapping[str, Any], key: str, path: Path) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise _fail(path, key, f"must be a string, got {type(value).__name__}")
    return value


def _object(value: Any, where: str, path: Path) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _fail(path, where, f"must be a JSON object, got {type(value).__name__}")
    return value


def _schema(data: Mapping[str, Any], key: str, path: Path) -> Mapping[str, Any] | None:
    if key not in data:
        return None
    schema = _object(data[key], key, path)
    if schema.get("type") != "object":
        raise _fail(path, key, 'must be an object schema ({"type": "object", ...})')
    import jsonschema

    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path)
        raise _fail(
            path, f"{key}/{where}" if where else key, f"is not a valid JSON Schema: {exc.message}"
        ) from None
    return schema


def _strings(value: Any, where: str, path: Path) -> None:
    if isinstance(value, str):
        return
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise _fail(path, where, "must be a string or a list of strings")


def _examples(data: Mapping[str, Any], path: Path) -> tuple[Mapping[str, Any], ...]:
    value = data.get("examples", [])
    if not isinstance(value, list):
        raise _fail(path, "examples", f"must be a list, got {type(value).__name__}")
    for i, example in enumerate(value):
        where = f"examples[{i}]"
        _object(example, where, path)
        unknown = sorted(set(example) - set(EXAMPLE_KEYS))
        if unknown:
            raise _fail(
                path, f"{where}.{unknown[0]}", f"is not allowed; use {', '.join(EXAMPLE_KEYS)}"
            )
        if "input" not in example:
            raise _fail(path, f"{where}.input", "is required: the arguments of the example call")
        _object(example["input"], f"{where}.input", path)
        for key in ("description", "explanation"):
            if key in example and not isinstance(example[key], str):
                raise _fail(path, f"{where}.{key}", "must be a string")
    return tuple(value)


def _usage(data: Mapping[str, Any], path: Path) -> Mapping[str, Any] | None:
    if "usage_guidance" not in data:
        return None
    usage = _object(data["usage_guidance"], "usage_guidance", path)
    for key, value in usage.items():
        _strings(value, f"usage_guidance.{key}", path)
    return usage


def _errors(data: Mapping[str, Any], path: Path) -> Mapping[str, Any] | None:
    if "error_guidance" not in data:
        return None
    guidance = _object(data["error_guidance"], "error_guidance", path)
    for key, value in guidance.items():
        if key != "common_errors":
            _strings(value, f"error_guidance.{key}", path)
            continue
        if not isinstance(value, list):
            raise _fail(path, "error_guidance.common_errors", "must be a list of objects")
        for i, entry in enumerate(value):
            where = f"error_guidance.common_errors[{i}]"
            _object(entry, where, path)
            for k in ERROR_KEYS:
                if not isinstance(entry.get(k), str):
                    raise _fail(path, f"{where}.{k}", "is required and must be a string")
    return guidance


def parse_doc(data: Any, path: Path) -> DocFile:
    """Validate one doc file's parsed JSON; ``path`` names it in errors."""
    _object(data, "(root)", path)
    unknown = sorted(set(data) - set(DOC_KEYS))
    if unknown:
        raise _fail(path, unknown[0], f"is not allowed; a doc file holds {', '.join(DOC_KEYS)}")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise _fail(path, "name", "is required: the tool's name, a non-empty string")
    if not TOOL_NAME.match(name):
        raise _fail(path, "name", f"{name!r} is not a valid MCP tool name")
    if name != path.stem:
        raise _fail(
            path, "name", f"is {name!r} but the file is named {path.name!r}; they must match"
        )
    annotations = data.get("annotations")
    if annotations is not None:
        _object(annotations, "annotations", path)
    return DocFile(
        name=name,
        path=path,
        title=_string(data, "title", path),
        description=_string(data, "description", path),
        input_schema=_schema(data, "inputSchema", path),
        output_schema=_schema(data, "outputSchema", path),
        annotations=annotations,
        doc=ToolDoc(
            examples=_examples(data, path),
            usage_guidance=_usage(data, path),
            error_guidance=_errors(data, path),
        ),
    )


def load_doc_file(path: str | Path) -> DocFile:
    """Read and validate one ``<tool>.json`` file (``ConfigError`` on any problem)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text("utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"Tool description file {path}: invalid JSON at line {exc.lineno}, "
            f"column {exc.colno}: {exc.msg}",
            path=str(path),
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"Tool description file {path}: cannot read it: {exc}", path=str(path)
        ) from None
    return parse_doc(data, path)


def load_docs_dir(folder: str | Path) -> dict[str, DocFile]:
    """Every ``*.json`` file in ``folder``, validated, by tool name."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ConfigError(
            f"Tool descriptions folder {folder} does not exist or is not a folder",
            key="descriptions.dir",
            path=str(folder),
        )
    return {p.stem: load_doc_file(p) for p in sorted(folder.glob("*.json"))}


def derive(tool: Tool, file: DocFile | None = None) -> dict[str, Any]:
    """A tool's full description: its doc file's text where given, else its own metadata.

    The schemas are always the registered tool's (they are what calls are validated
    against); ``ToolDocs.check`` makes sure a file's schemas agree with them.
    """
    doc = tool.doc or ToolDoc()
    if file is not None:
        doc = ToolDoc(
            examples=file.doc.examples or doc.examples,
            usage_guidance=file.doc.usage_guidance or doc.usage_guidance,
            error_guidance=file.doc.error_guidance or doc.error_guidance,
        )
    title = file.title if file is not None and file.title is not None else tool.title
    description = (
        file.description if file is not None and file.description is not None else tool.description
    )
    annotations = file.annotations if file is not None and file.annotations else tool.annotations
    out: dict[str, Any] = {"name": tool.name}
    if title is not None:
        out["title"] = title
    out["description"] = description
    out["inputSchema"] = dict(tool.input_schema)
    if tool.output_schema is not None:
        out["outputSchema"] = dict(tool.output_schema)
    if annotations:
        out["annotations"] = dict(annotations)
    if doc.examples:
        out["examples"] = [dict(e) for e in doc.examples]
    if doc.usage_guidance:
        out["usage_guidance"] = dict(doc.usage_guidance)
    if doc.error_guidance:
        out["error_guidance"] = dict(doc.error_guidance)
    return out


class ToolDocs:
    """Full descriptions of a catalog's tools, from doc files or derived; cached.

    >>> docs = ToolDocs.from_dir("tool_descriptions")   # doctest: +SKIP
    >>> docs.check(toolset.catalog)                       # doctest: +SKIP
    >>> docs.describe(toolset.catalog.tools["my_tool"])   # doctest: +SKIP
    """

    def __init__(self, files: Mapping[str, DocFile] | None = None) -> None:
        self.files: Mapping[str, DocFile] = dict(files or {})
        self._cache: dict[str, tuple[Tool, dict[str, Any]]] = {}

    @classmethod
    def from_dir(cls, folder: str | Path | None) -> ToolDocs:
        """Docs from ``folder`` (validated now), or derived-only when it is None."""
        return cls(load_docs_dir(folder) if folder is not None else None)

    def check(self, catalog: Catalog, *, names: Sequence[str] | None = None) -> None:
        """Bind the files to registered tools: every file names a tool, its schemas
        equal the tool's, and its examples' inputs fit the input schema."""
        import jsonschema

        for name in names if names is not None else sorted(self.files):
            file = self.files[name]
            tool = catalog.tool(name)
            if tool is None:
                raise _fail(file.path, "name", f"names {name!r}, which is not a registered tool")
            for key, mine, theirs in (
                ("inputSchema", file.input_schema, tool.input_schema),
                ("outputSchema", file.output_schema, tool.output_schema),
            ):
                if mine is not None and dict(mine) != (dict(theirs) if theirs else None):
                    raise _fail(
                        file.path,
                        key,
                        f"differs from the registered tool's {key}; remove it from the file "
                        "(the tool's own schema is served) or make the two equal",
                    )
            validator = jsonschema.validators.validator_for(tool.input_schema)(tool.input_schema)
            for i, example in enumerate(file.doc.examples):
                error = jsonschema.exceptions.best_match(validator.iter_errors(example["input"]))
                if error is not None:
                    where = "/".join(str(p) for p in error.absolute_path)
                    raise _fail(
                        file.path,
                        f"examples[{i}].input" + (f".{where}" if where else ""),
                        f"does not fit the tool's input schema: {error.message}",
                    )

    def describe(self, tool: Tool) -> dict[str, Any]:
        """The tool's full description (cached per tool version; treat it as read-only)."""
        cached = self._cache.get(tool.name)
        if cached is not None and cached[0] is tool:
            return cached[1]
        described = derive(tool, self.files.get(tool.name))
        self._cache[tool.name] = (tool, described)
        return described


__all__ = ["DocFile", "ToolDocs", "derive", "load_doc_file", "load_docs_dir", "parse_doc"]

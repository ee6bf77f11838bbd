"""Shared test set-up: loads every fixture module in tests/_fixtures as a plugin.

The tests start toolgate, its demo backends and test servers as subprocesses a few
hundred times per run; with ``PYTHONDONTWRITEBYTECODE`` set each of them would compile
``src/toolgate`` again, so it is unset here and they share ``__pycache__`` (gitignored).
TLS contexts read CA certificates when one is checked (``_certificates_read_when_needed``).
"""

import logging
import os
import re
import ssl
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False


def _certificates_read_when_needed() -> None:
    """TLS contexts read the system's CA certificates from OpenSSL's hashed directory,
    when a certificate is checked, not from the bundle file each time one is made.

    Every ``httpx2`` client makes a TLS context, and one made from the bundle file
    parses its ~150 certificates: about 50 ms of CPU, for clients that speak plain HTTP
    to 127.0.0.1. The tests make many hundreds (their MCP clients, the gateways' backend
    clients, in the workers and in the processes they start; 50 concurrent clients took
    4 of the 17 s of ``test_fifty_concurrent_http_sessions_never_see_each_others_tools``).
    The directory holds the same certificates; a ``SSL_CERT_FILE`` naming another bundle
    than the system's is left as it is.
    """
    paths = ssl.get_default_verify_paths()
    capath, bundle = paths.openssl_capath, os.path.realpath(paths.openssl_cafile)
    if not os.path.isdir(capath) or not any(
        re.fullmatch(r"[0-9a-f]{8}\.\d+", name) for name in os.listdir(capath)
    ):
        return  # no hashed directory to read them from
    cafile = os.environ.get("SSL_CERT_FILE")
    if cafile and os.path.realpath(cafile) != bundle:
        return
    os.environ.pop("SSL_CERT_FILE", None)
    os.environ["SSL_CERT_DIR"] = capath


_certificates_read_when_needed()

# mcp_servers first: other fixture modules import it, and a plugin must be registered
# before anything imports it for pytest to rewrite its asserts
pytest_plugins = sorted(
    (
        f"_fixtures.{p.stem}"
        for p in (Path(__file__).parent / "_fixtures").glob("*.py")
        if not p.name.startswith("__")
    ),
    key=lambda name: (name != "_fixtures.mcp_servers", name),
)


@pytest.fixture(autouse=True)
def _root_logging_restored() -> Iterator[None]:
    """The root logger's handlers and level as they were before the test.

    A test that runs the ``toolgate`` command in process (``cli.main``) points the root
    logger at that test's captured stderr, which is closed after it; left in place, a
    later test's log line fails to write, and logging prints the error with a traceback.
    On CPython 3.11.7 that print, reached from a finalizer while ``ast.parse`` runs,
    parses source again and breaks the outer parse ("AST constructor recursion depth
    mismatch", python/cpython#106905): a test failing for another test's handler.
    """
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


#: the longest files (each 40 to 195 s of one worker in a full run on a loaded 2-core
#: machine, measured with ``--durations=0``), longest first: xdist's ``loadfile`` hands
#: out files in collection order (``--no-loadscope-reorder`` in pyproject.toml keeps it
#: from re-sorting them by their number of tests), so a long file collected late ran
#: alone at the end while the other workers sat idle. Started first, the short files
#: fill in behind them. Without that option xdist had put the long files of few tests
#: (``test_store_e2e.py``, ``test_gateway_demo.py``, ``test_conformance.py``) last.
LONGEST_FIRST = (
    "test_eval.py",
    "test_replicas.py",
    "test_store_e2e.py",
    "test_install.py",
    "test_no_path_leaks.py",
    "test_gateway_serve.py",
    "test_gateway_demo.py",
    "test_examples.py",
    "test_conformance.py",
    "test_gateway_call_relay.py",
    "test_gateway_ops_edges.py",
    "test_grouping.py",
    "test_gateway_reload.py",
    "test_gateway_init.py",
    "test_gateway_listen.py",
    "test_fastmcp_eras.py",
    "test_gateway_inspect.py",
    "test_gateway_stdio_signals.py",
    "test_gateway_config_schema.py",
    "test_gateway_drain.py",
    "test_gateway_inspector.py",
    "test_adapter_spec_http.py",
    "test_dashboard.py",
    "test_gateway_oauth.py",
    "test_gateway_relay.py",
    "test_hardening_sessions.py",
    "test_store_concurrency.py",
    "test_gateway_content.py",
    "test_gateway_check.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Longest files first (``LONGEST_FIRST``), the rest in name order; a file's own
    tests keep their order (a stable sort)."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))

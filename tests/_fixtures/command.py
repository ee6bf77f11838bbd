"""The ``toolgate`` command's own code (``toolgate.cli.main``) run in the test process.

For tests about what a command prints and returns, not about the process: each saves a
process start (the imports alone cost about 2 CPU-seconds). Files using it keep at least
one test on the real ``toolgate`` process (``_fixtures.gateway.toolgate_argv``).
"""

from __future__ import annotations

import contextlib
import io
import subprocess
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from toolgate.cli import main


def command_in_process(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``toolgate ARGS`` (in ``cwd``, if given): its exit status, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.ExitStack() as stack:
        if cwd is not None:
            stack.enter_context(contextlib.chdir(cwd))
        stack.enter_context(redirect_stdout(out))
        stack.enter_context(redirect_stderr(err))
        status = main(list(args))
    return subprocess.CompletedProcess(list(args), status, out.getvalue(), err.getvalue())

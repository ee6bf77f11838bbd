"""The specification every adapter meets, over the gateway's real HTTP app.

The scenarios of ``tests/test_adapter_spec.py``, word for word, served by ``toolgate
serve``'s HTTP app under uvicorn with the gateway's own protocol, the guard and the
session cap in the path, through real clients over streamable HTTP: once with the fast
path for ``tools/call`` (``gateway-http``) and once with ``toolgate.http.fast_path`` off,
every request through the SDK's transport (``gateway-http-sdk``). Both must answer as
the in-memory adapters do: the same results, notifications and errors. A file of its
own so the test runner's two workers share the scenarios.
"""

from __future__ import annotations

import pytest

from _fixtures.spec import HTTP_ADAPTERS, Adapter
from test_adapter_spec import *  # noqa: F403  (the scenarios, collected here again)


@pytest.fixture(params=HTTP_ADAPTERS)
def adapter(request: pytest.FixtureRequest) -> Adapter:
    """The gateway's real HTTP app, with its fast path and without it."""
    return Adapter(request.param)

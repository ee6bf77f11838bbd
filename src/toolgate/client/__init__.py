"""Interim: the module moved here whole; the split into modules follows."""

from toolgate.client.export import *  # noqa: F403
from toolgate.client.export import _RAW  # noqa: F401

"""Interim: the module moved here whole; the split into modules follows."""

from toolgate.toolset.toolset import *  # noqa: F403

"""Interim: the module moved here whole; the split into modules follows."""

from toolgate.catalog.registry import *  # noqa: F403

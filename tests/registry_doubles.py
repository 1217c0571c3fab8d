"""Test doubles of the registry's entries for the nightly's plumbing: each runs a plain function given to it
instead of a Prefect flow or a release writer."""
from dataclasses import dataclass
from typing import Callable

from caseforge.flows import registry


@dataclass(frozen=True)
class SourceDouble(registry.Source):
    """A source whose run is `refresh(settings, **kwargs)`."""
    refresh: Callable = None

    def run(self, settings, **kwargs):
        return self.refresh(settings, **kwargs)


@dataclass(frozen=True)
class BuilderDouble(registry.Builder):
    """A builder (or evaluation) whose run is `builder(settings, **kwargs)`."""
    builder: Callable = None

    def run(self, settings, **kwargs):
        return self.builder(settings, **kwargs)


@dataclass(frozen=True)
class ReleaseDouble(registry.Release):
    """A release whose writer is `writer(con, folder)`."""
    writer: Callable = None

    def write(self, con, folder):
        return self.writer(con, folder)

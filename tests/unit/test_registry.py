"""One registry is read by the CLI, the nightly and the deployments: they cannot drift apart."""
from __future__ import annotations

import argparse
import inspect
from pathlib import Path

import pytest
import yaml

from caseforge.cli import build_parser
from caseforge.flows import registry

ROOT = Path(__file__).resolve().parents[2]
CLI_ONLY = {"db", "handler", "format", "command", "source", "dataset", "evaluation", "verbose", "debug", "guides",
            "retry_failed", "refresh"}
ENTRIES = [("ingest", registry.SOURCES), ("build", registry.BUILDERS), ("eval", registry.EVALUATIONS)]


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


@pytest.mark.parametrize("verb, entries", ENTRIES)
def test_every_entry_has_its_subcommand_whose_options_are_flow_parameters(verb, entries):
    commands = subcommands(subcommands(build_parser())[verb])
    assert set(commands) == set(entries)
    for name, entry in entries.items():
        flow = entry.flow()
        parameters = set(inspect.signature(flow.fn).parameters)
        options = {a.dest for a in commands[name]._actions if a.dest not in ("help",)}
        strays = options - parameters - CLI_ONLY
        assert strays == set(), f"{verb} {name}: options that no parameter of {flow.name} takes"


def test_every_release_is_exported_by_its_name():
    assert set(subcommands(subcommands(build_parser())["export"])) == set(registry.RELEASES)
    for release in registry.RELEASES.values():
        assert callable(release.load_writer()) and release.inputs


def test_sources_name_their_archive_and_samples():
    for source in registry.SOURCES.values():
        assert source.archive_source and source.outputs
        assert source.samples is not None, f"{source.name}: no sample paths for --from-samples"


def test_deployments_run_flows_the_registry_knows():
    known = {entry.flow().fn for group in (registry.SOURCES, registry.BUILDERS, registry.EVALUATIONS)
             for entry in group.values()}
    from caseforge.flows.llm_shard import llm_shard_flow
    from caseforge.flows.nightly import nightly_refresh

    known |= {nightly_refresh.fn, llm_shard_flow.fn}
    by_entrypoint = {}
    for prefect_file in (ROOT / "deployments").rglob("*.yaml"):
        config = yaml.safe_load(prefect_file.read_text())
        for deployment in (config or {}).get("deployments") or []:
            entrypoint = deployment["entrypoint"]
            if ":" in entrypoint:                 # a file of the project: path/to/flow.py:function
                path, _, name = entrypoint.partition(":")
                assert (ROOT / path).is_file(), f"{prefect_file.name}: {deployment['name']}: no file {path}"
                module = "caseforge." + path.removesuffix(".py").replace("/", ".")
            else:                                 # a module of the installed package: caseforge.flows.x.function
                module, _, name = entrypoint.rpartition(".")
            by_entrypoint[deployment["name"]] = getattr(__import__(module, fromlist=[name]), name).fn
    assert by_entrypoint and set(by_entrypoint.values()) <= known

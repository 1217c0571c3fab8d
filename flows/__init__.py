"""Prefect flows: one thin flow per source, builder, evaluation and release step, the nightly over all
of them, and the registry that names them (caseforge.flows.registry). What serves and runs them (the
Prefect servers, their set-up, the warm worker) is caseforge.runtime, one floor below.

Importing this package imports caseforge.runtime first, which sets what Prefect must see before it is first
imported (no telemetry, caseforge's log lines in every flow run's log).
"""
from caseforge import runtime  # noqa: F401  (Prefect's environment, before any flow imports Prefect)

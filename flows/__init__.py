"""Prefect flows: one thin flow per source, builder, evaluation and release step, the nightly over all
of them, and the registry that names them (caseforge.flows.registry).

Importing this package sets what Prefect must see before it is first imported: no telemetry from a
closed machine, and a patient start-up of the temporary local server.
"""
import os

os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
# caseforge's own log lines (progress of fetch, parse, gate and LLM jobs among them) in every flow run's
# log: Prefect gives the loggers named here its API handler. Outside a run they are not sent anywhere.
os.environ.setdefault("PREFECT_LOGGING_EXTRA_LOGGERS", "caseforge")
os.environ.setdefault("PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW", "ignore")

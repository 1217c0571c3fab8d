"""Prefect's runtime for caseforge, below the flows: which Prefect server a command reports to and the local one
commands share (prefect_api, local_server, server_watchdog), what a Prefect server is set up with (server_setup:
work pools, concurrency limits, the zombie-run and failure-notification automations), and the GPU machines' warm
worker (warm_worker). The flows and the command line use it; it uses the core, never a flow, a task or the CLI.

Importing this package sets what Prefect must see before it is first imported (caseforge.flows imports it for
the same reason): no telemetry from a closed machine, a patient start-up of the temporary local server, and
caseforge's own log lines in every flow run's log.
"""
import os

os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
# caseforge's own log lines (progress of fetch, parse, gate and LLM jobs among them) in every flow run's
# log: Prefect gives the loggers named here its API handler. Outside a run they are not sent anywhere.
os.environ.setdefault("PREFECT_LOGGING_EXTRA_LOGGERS", "caseforge")
os.environ.setdefault("PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW", "ignore")

"""A process worker whose flow runs start warm: for GPU machines of a process pool, where a fresh process per shard
run would import Prefect and caseforge and load the step's model again for every shard.

    .venv/bin/python -m caseforge.runtime.warm_worker --pool caseforge-gpu [--name gpu-1]

is Prefect's own process worker (`prefect worker start --pool caseforge-gpu --type process --limit 1`, run in this
process) with one difference: beside it runs a *warm process* that has imported Prefect, what caseforge's shard
flow runs and its libraries, and each flow run starts there instead of in a new `python -m prefect.engine`. Prefect
still sees one process per flow run, a small *launcher* (a fraction of a second) that hands the run to the warm
process and stands for it: the run's output goes to the launcher's stdout and stderr, its exit code is the
launcher's, a SIGTERM to the launcher (a cancellation) is passed on, and the launcher's death (SIGKILL) ends the
run with the warm process, as it would end a fresh process. The warm process runs the flow run in its main thread
the way `python -m prefect.engine` does, with the launcher's environment (flow-run heartbeats, cancellation and
crash reports are Prefect's own), then waits for the next one. What the runs loaded stays loaded: the in-process
backends of caseforge.llm.config, so a llama.cpp or offline vLLM model is loaded once per worker, not once per
shard.

One run at a time (`--limit 1`: one GPU per worker). After a run that did not end normally (non-zero exit, a
signal, a lost launcher) the warm process ends, and the worker starts a new one. While none is ready (its start,
or a warm process that cannot start at all), runs start cold, exactly as under `prefect worker start`.

Three programs, one module each: the worker (`worker`, started as above), the warm process it keeps beside it
(`serve`), and the launcher each flow run starts (`launch`); `protocol` is how the launcher and the warm process
talk (a Unix socket in a folder only this user can open).
"""

# Two commands a fresh clone needs:  `make run` (set up, then the main job) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SAMPLES ?= $(or $(CASEFORGE_SAMPLES),../shared/samples)
# llama.cpp (llama-cpp-python compiles it at install) is built for a portable x86-64 level (AVX2, FMA, F16C), not for
# this CPU: a native build on a virtual machine that advertises AMX but traps its instructions died with SIGILL
# (`tilezero` in ggml_backend_amx_mul_mat) at the first SmolLM2 answer. pip reuses a wheel it already built
# whatever CMAKE_ARGS says: `pip cache remove llama_cpp_python` before `make setup` to rebuild one.
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF

REVIEW_VENV := .venv-review
REVIEW_PORT ?= 8080

.PHONY: setup setup-workers setup-worker setup-review setup-harness review-server run test test-smollm test-bench bench clean

# requirements-nodeps.lock: irrCAC, whose pins conflict with the lock's scipy and numpy, installed without them
# (it needs only numpy, pandas and scipy; docs/review.md says why).
$(VENV)/.installed: requirements.lock requirements-nodeps.lock pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/pip install --quiet -r requirements.lock
	$(BIN)/pip install --quiet --no-deps -r requirements-nodeps.lock
	$(BIN)/pip install --quiet --no-deps -e .
	touch $@

setup: $(VENV)/.installed

# The programs caseforge drives without importing, each in a venv of its own pinned in requirements-NAME.lock:
# .venv-review, Label Studio (`caseforge review`, docs/review.md; about 1 GB, no torch), and .venv-harness, the
# harnesses a release's tasks run in (inspect-ai, lm-eval; without caseforge: tests/integration/test_release_harness.py).
.venv-%/.installed: requirements-%.lock
	$(PYTHON) -m venv .venv-$*
	.venv-$*/bin/pip install --quiet --upgrade pip
	.venv-$*/bin/pip install --quiet -r $<
	touch $@

setup-review: $(REVIEW_VENV)/.installed

# The Label Studio server of `caseforge review` on loopback (signup closed, no version check; docs/review.md):
# its first user from CASEFORGE_REVIEW_USER, CASEFORGE_REVIEW_PASSWORD and CASEFORGE_REVIEW_TOKEN.
review-server: setup setup-review
	$(BIN)/python -m caseforge.review.server --data-dir data/label-studio --port $(REVIEW_PORT)

# The extra `workers`: Prefect's docker and kubernetes workers for a caseforge-gpu pool of those types,
# pinned in requirements-workers.lock on top of requirements.lock (a process pool needs nothing more).
$(VENV)/.workers: $(VENV)/.installed requirements-workers.lock
	$(BIN)/pip install --quiet -r requirements.lock -r requirements-workers.lock
	touch $@

setup-workers: $(VENV)/.workers

# A GPU machine whose shards the `openai` backend answers (its own `vllm serve` does the model's work): Prefect, the
# shard store and caseforge, without llama.cpp, torch or the pipelines' libraries. The packages are those of
# requirements-worker.txt, at requirements.lock's versions. `make setup` later adds the rest to the same .venv.
$(VENV)/.worker: requirements.lock requirements-worker.txt pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c requirements.lock -r requirements-worker.txt
	$(BIN)/pip install --quiet --no-deps -e .
	touch $@

setup-worker: $(VENV)/.worker

HARNESS_VENV := .venv-harness
setup-harness: $(HARNESS_VENV)/.installed

# The main job: the nightly refresh of every source on the recorded samples (no network needed).
# caseforge exits 1 when the nightly ran to the end and reports what its gates refused (with the small packaged
# models, what they wrote), 2 when it could not run (a missing samples folder, a busy warehouse). GNU make itself
# has one failure status, 2, whatever the recipe's was, so a line before make's own says caseforge's; for the status
# itself, run `.venv/bin/caseforge run nightly --from-samples` after `make setup`.
run: setup
	CASEFORGE_SAMPLES=$(SAMPLES) $(BIN)/caseforge run nightly --from-samples; code=$$?; \
	if [ $$code -eq 1 ]; then echo "make run: caseforge exited 1: the nightly ran to the end and reports the problems" \
	"above; with the small packaged models their output is refused and not released: README, Two commands" >&2; \
	elif [ $$code -ne 0 ]; then echo "make run: caseforge exited $$code (2: the nightly could not run, the reason" \
	"is above; 130, 143: stopped by Ctrl-C, SIGTERM)" >&2; fi; \
	exit $$code

# The suite on TEST_WORKERS pytest-xdist workers; the tests that share a server started once per session go to one
# worker (tests/xdist_groups.py), so that server starts once; so do the tests of one integration module.
# It stops at once, in one line, when the temporary folder's disk has less than TEST_DISK_GB free (the suite's
# temporary files reach about 4 GB: tests/disk_room.py).
TEST_WORKERS ?= 3
TEST_DISK_GB ?= 4
test: setup setup-review setup-harness
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup --durations=15 --junitxml=out/ci-artifacts/junit.xml \
		--require-free-disk $(TEST_DISK_GB)

# Whole pipelines on the real SmolLM2 model through llama.cpp (several minutes on 2 cores).
test-smollm: setup
	$(BIN)/python -m pytest -q -m smollm_pipeline

# The quick modes of the benches that run whole nightly commands alone (bench/nightly_scale.py: four nightlies,
# bench/disk_full_nightly.py: four, bench/fanout_nightly.py: two and a Prefect deployment);
# `make test` runs them too.
test-bench: setup
	$(BIN)/python -m pytest -q -m nightly_bench tests/bench

bench: setup
	$(BIN)/python bench/oyez_parse.py

clean:
	rm -rf $(VENV) $(REVIEW_VENV) $(HARNESS_VENV) data

.PHONY: setup setup-test run test test-unit test-docker test-security test-web bench bench-speed bench-batch load e2e-compose lint lint-checks clean

# Python may cache compiled modules and pytest its rewritten test modules (in __pycache__/, ignored by git
# and by the image builds) even where the environment says not to: every run would compile them again.
unexport PYTHONDONTWRITEBYTECODE

setup:
	@scripts/setup.sh

run: setup
	.venv/bin/grader serve

setup-test:
	@scripts/setup-test.sh

# The unit tier first, in a random order (a new seed each run, printed at the top) and on every core, as
# test-unit runs it; then the tiers with Docker, in file order around one service per runtime.
UNIT = .venv/bin/pytest -p no:schemathesis -p randomly --numprocesses=auto --maxprocesses=4 $(UNIT_ARGS) tests/unit

test: setup-test lint-checks
	$(UNIT)
	.venv/bin/pytest --ignore=tests/unit --durations=20

# One tier at a time (make test runs them all): no Docker; the service with real sandboxes and databases
# (integration and HTTP); the attacks; the pages in Chromium.
test-unit: setup
	$(UNIT)
test-docker: setup-test
	.venv/bin/pytest tests/integration tests/http
test-security: setup-test
	.venv/bin/pytest tests/security
test-web: setup-test
	.venv/bin/pytest tests/web

# What the judge costs on top of the tests, against the limit measured in the same run (docs/BENCHMARKS.md):
# runc and gVisor, local and Celery mode, so it sets up what the tests set up (runsc, PostgreSQL, Redis).
bench: setup-test
	.venv/bin/python bench/bench.py

# Speed grading's fidelity per problem and size (the judged time against the in-process truth, x2 and x4
# solutions, ordering and spread over 20 gradings), then its noise on a synthetic problem (docs/BENCHMARKS.md).
bench-speed: setup
	.venv/bin/python bench/speed_fidelity.py
	.venv/bin/python bench/speed_noise.py

# 1,000 solutions, a quarter looping forever, through POST /api/submissions/batch (grader submit --batch).
bench-batch: setup
	.venv/bin/python bench/batch.py

# Celery mode under load: 1,000 submissions from 32 clients, a worker killed with -9 halfway.
load: setup-test
	.venv/bin/python bench/load.py

# docker-compose.yml end to end: images, up, grade one submission through it, down.
e2e-compose: setup
	scripts/e2e-compose.sh

lint: setup lint-checks

# Style, complexity (ruff's C901, at most 15) and size (modules at most 400 lines, functions 80).
lint-checks:
	.venv/bin/ruff check grader sandbox tests bench scripts
	.venv/bin/ruff format --check grader sandbox tests bench scripts
	.venv/bin/python scripts/check-sizes.py

clean:
	rm -rf .venv .cache data

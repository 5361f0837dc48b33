.PHONY: setup setup-test run test bench load e2e-compose lint clean

setup:
	@scripts/setup.sh

run: setup
	.venv/bin/grader serve

setup-test:
	@scripts/setup-test.sh

test: setup-test
	.venv/bin/pytest

bench: setup
	.venv/bin/python bench/bench.py

# Celery mode under load: 1,000 submissions from 32 clients, a worker killed with -9 halfway.
load: setup-test
	.venv/bin/python bench/load.py

# docker-compose.yml end to end: images, up, grade one submission through it, down.
e2e-compose: setup
	scripts/e2e-compose.sh

lint: setup
	.venv/bin/ruff check grader sandbox tests

clean:
	rm -rf .venv .cache data

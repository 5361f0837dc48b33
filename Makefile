.PHONY: setup run test bench lint clean

setup:
	@scripts/setup.sh

run: setup
	.venv/bin/grader serve

test: setup
	.venv/bin/pytest

bench: setup
	.venv/bin/python bench/bench.py

lint: setup
	.venv/bin/ruff check grader sandbox tests

clean:
	rm -rf .venv .cache data

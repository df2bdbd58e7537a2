# andal — `make help` lists the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV ?= .venv
PY := $(VENV)/bin/python
# Where `make install` goes, decided before the defaults below fill PGHOST/PGPORT/PGUSER in:
# $DATABASE_URL, else the libpq variables the caller set; neither: it refuses.
INSTALL_TARGET := $(if $(DATABASE_URL),$(DATABASE_URL),$(if $(PGHOST)$(PGPORT)$(PGUSER)$(PGDATABASE),postgresql://,))
PGHOST ?= 127.0.0.1
PGPORT ?= 5432
PGUSER ?= postgres
export PGHOST PGPORT PGUSER
# The first part of every database and role name the tests make on the (shared) server:
# `make test ANDAL_TEST_PREFIX=ci7` installs with roles ci7_producer ... into ci7_pgtap ...
ANDAL_TEST_PREFIX := $(or $(ANDAL_TEST_PREFIX),andal)
export ANDAL_TEST_PREFIX
TEST_DB ?= $(ANDAL_TEST_PREFIX)_pgtap
# COMMAND... run on the SQL test files of a directory (@DIR@), under another prefix than
# andal on a copy naming the roles ANDAL_TEST_PREFIX_worker ... (.ci/with-test-roles.sh)
WITH_TEST_ROLES = bash .ci/with-test-roles.sh '$(ANDAL_TEST_PREFIX)'
# Shard count of the live table: `make install SHARDS=8`; make test also runs the suites on a
# sharded install with TEST_SHARDS shards.
SHARDS ?=
TEST_SHARDS ?= 4
# PostgreSQL's isolation tester (Debian: postgresql-client-15) and the programs it runs
PG_PKGLIBDIR ?= $(shell pg_config --pkglibdir)
PG_BINDIR ?= $(shell pg_config --bindir)
PG_ISOLATION_REGRESS ?= $(PG_PKGLIBDIR)/pgxs/src/test/isolation/pg_isolation_regress
ISOLATION_DB ?= $(TEST_DB)_isolation$(if $(SHARDS),_sharded)
ISOLATION_SPECS ?= $(sort $(basename $(notdir $(wildcard sql/isolation/specs/*.spec))))
DEB_PACKAGES := postgresql-15-pgtap postgresql-15-plproxy libtap-parser-sourcehandler-pgtap-perl postgresql-15-plpgsql-check chromium chromium-driver

.PHONY: help venv deps install dist test test-sql test-isolation test-py lint demo bench bench-quick soak clean schema-dump screenshots

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

# setup.py reads the version from sql/functions/queue/version.sql: a bump reinstalls
$(VENV)/.installed: pyproject.toml setup.py sql/functions/queue/version.sql
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	@rm -rf pydriver/andal.egg-info  # left by the distribution's old name
	$(PY) -m pip install -q -e '.[test]'
	@touch $@

venv: $(VENV)/.installed ## create .venv and install andal with its test extras

dist: venv ## build the wheel and the sdist into dist/ (pip install dist/andal_pg-*.whl)
	rm -rf dist build
	$(PY) -m build --outdir dist .

deps: ## install the Debian packages the tests need (pgTAP, pg_prove, plpgsql_check, Chromium)
	@bash .ci/deps.sh $(DEB_PACKAGES)

install: venv ## install or upgrade andal in DATABASE_URL, else the PG* variables (refuses with neither)
	@if [ -z '$(INSTALL_TARGET)' ]; then \
		echo "make install: no database given: set DATABASE_URL (make install" \
			"DATABASE_URL=postgresql://app@db.example/app) or PGHOST/PGPORT/PGUSER/PGDATABASE;" \
			"nothing was installed" >&2; exit 2; fi
	@echo "make install: into $(if $(DATABASE_URL),\$$DATABASE_URL,$$PGUSER@$$PGHOST:$$PGPORT/$${PGDATABASE:-$$PGUSER})"
	$(VENV)/bin/andal --dsn '$(INSTALL_TARGET)' install $(if $(SHARDS),--shards $(SHARDS))

test: venv deps ## every test, on an unsharded and a sharded install, then the benchmark smoke test
	$(MAKE) --no-print-directory test-sql
	$(MAKE) --no-print-directory test-sql SHARDS=$(TEST_SHARDS) TEST_DB=$(TEST_DB)_sharded
	$(MAKE) --no-print-directory test-isolation
	$(MAKE) --no-print-directory test-isolation SHARDS=$(TEST_SHARDS)
	$(MAKE) --no-print-directory test-py
	$(MAKE) --no-print-directory test-py SHARDS=$(TEST_SHARDS)
	$(MAKE) --no-print-directory bench-quick

test-sql: venv ## pgTAP tests in a fresh database (SHARDS=4: on a sharded install)
	@$(WITH_TEST_ROLES)  # refuses a prefix that cannot start a name
	@psql -q -X -d postgres -c 'drop database if exists $(TEST_DB)' -c 'create database $(TEST_DB)'
	$(PY) -m andal.install "postgresql://$(PGUSER)@$(PGHOST):$(PGPORT)/$(TEST_DB)" \
		--role-prefix $(ANDAL_TEST_PREFIX) $(if $(SHARDS),--shards $(SHARDS)) >/dev/null
	@psql -q -X -d $(TEST_DB) -c 'create extension if not exists pgtap'
	$(WITH_TEST_ROLES) sql/tests pg_prove -d $(TEST_DB) --recurse --ext .sql @DIR@/
	@psql -q -X -d postgres -c 'drop database if exists $(TEST_DB)'

test-isolation: venv ## isolation specs (sql/isolation) with PostgreSQL's isolationtester, in a fresh database (SHARDS=4: sharded)
	@$(WITH_TEST_ROLES)  # refuses a prefix that cannot start a name
	@psql -q -X -d postgres -c 'drop database if exists $(ISOLATION_DB)' -c 'create database $(ISOLATION_DB)'
	$(PY) -m andal.install "postgresql://$(PGUSER)@$(PGHOST):$(PGPORT)/$(ISOLATION_DB)" \
		--role-prefix $(ANDAL_TEST_PREFIX) $(if $(SHARDS),--shards $(SHARDS)) >/dev/null
	@rm -rf sql/isolation/output/$(ISOLATION_DB); mkdir -p sql/isolation/output/$(ISOLATION_DB); rc=0; \
	$(WITH_TEST_ROLES) sql/isolation $(PG_ISOLATION_REGRESS) --use-existing --bindir='$(PG_BINDIR)' \
		--host=$(PGHOST) --port=$(PGPORT) --user=$(PGUSER) --dbname=$(ISOLATION_DB) --inputdir=@DIR@ \
		--outputdir=sql/isolation/output/$(ISOLATION_DB) $(ISOLATION_SPECS) || rc=$$?; \
	psql -q -X -d postgres -c 'drop database if exists $(ISOLATION_DB)'; \
	if [ $$rc -ne 0 ]; then cat sql/isolation/output/$(ISOLATION_DB)/regression.diffs >&2; fi; \
	exit $$rc

test-py: venv ## pytest suite (real PostgreSQL, real processes; SHARDS=4: on a sharded install)
	ANDAL_SHARDS=$(SHARDS) $(VENV)/bin/pytest -q $(PYTEST_ARGS)

lint: venv deps ## sqlfluff, ruff, mypy (the whole package), plpgsql_check and the size budgets
	$(VENV)/bin/sqlfluff lint sql/schema sql/functions
	$(VENV)/bin/ruff check pydriver tests bench setup.py
	$(VENV)/bin/ruff format --check pydriver tests bench setup.py
	$(VENV)/bin/mypy
	@bash .ci/plpgsql_check.sh
	$(PY) .ci/budgets.py

schema-dump: venv ## rewrite sql/schema.dump.sql from a fresh install (commit it with the schema change)
	$(PY) tests/schema.py

#: The pages docs/img/web-<page>.png shows, each saved by the Chromium tests as <page>.png.
SCREENSHOT_PAGES := overview queue dead-letters job workers banner-no-worker
SHOTS_DIR := .andal/screenshots-docs

screenshots: venv deps ## refresh docs/img/web-*.png: the Chromium tests' pages, on the scratch database they seed
	rm -rf $(SHOTS_DIR)
	ANDAL_SCREENSHOTS=$(CURDIR)/$(SHOTS_DIR) $(VENV)/bin/pytest -q tests/test_web.py tests/test_web_banner.py
	@for page in $(SCREENSHOT_PAGES); do cp $(SHOTS_DIR)/$$page.png docs/img/web-$$page.png; done
	@echo "make screenshots: refreshed $(foreach p,$(SCREENSHOT_PAGES),docs/img/web-$(p).png)"

demo: venv ## 20,000 jobs through a worker pool, on DATABASE_URL or the PGHOST/PGPORT server; DEMO_ARGS=
	$(PY) -m andal.demo $(DEMO_ARGS)

bench: venv ## the full benchmark W1–W7 (~26 min, not in make test); BENCH_ARGS="--only W1 --publish"
	$(PY) -m pip install -q -e '.[bench]'
	$(PY) -m bench.run $(BENCH_ARGS)

bench-quick: venv ## every benchmark workload at small sizes (smoke test, no timing assertions)
	$(PY) -m bench.run --quick $(BENCH_ARGS)
	$(PY) -m bench.router --quick

.PHONY: bench-scale
bench-scale: venv ## W8 scale workload alone, growth run to 10M jobs (20–40 min here; not in make test)
	$(PY) -m pip install -q -e '.[bench]'
	$(PY) -m bench.run --only W8 --scale-jobs 10000000 $(BENCH_ARGS)

soak: venv ## long reliability tests (not in CI, ~16 min); one of them: make soak SOAK=chaos
	$(VENV)/bin/pytest -q -s -m soak tests/reliability $(if $(SOAK),-k "$(SOAK)")

clean: ## remove the virtualenv and caches
	rm -rf $(VENV) .pytest_cache .ruff_cache

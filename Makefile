# kafka_wire: every target installs what it needs into .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test test-prerequisites test-compiled-prerequisites checks install peers lint typecheck regen docs check-generated bench clean compile test-pure test-compiled captures simulate-long fuzz-long

# PySpark and pyarrow for tests/spark come from the `spark` extra (Spark runs on the machine's
# JDK 17). Python peers come from the `test` extra (with the jars of the Java client 3.9.1: pyflink/lib
# of shigawire-apache-flink-libraries, run by the machine's JDK 17; the 4.4 client comes from
# `make peers`); the Node.js peer (kafkajs and its
# snappy/lz4/zstd codecs, two of them native addons that npm builds) from package-lock.json into
# ./node_modules (its own stamp: `make test` builds it beside the Python side). All of them serve
# tests/interop and tests/e2e.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,spark]'
	touch $(STAMP)

NODE_STAMP := node_modules/.installed
$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $(NODE_STAMP)

# Debian packages the tests need, installed when missing; one apt-get at a time (make test builds
# its prerequisites with two jobs, and apt-get fails rather than waits on another's lock).
APT_INSTALL = flock /tmp/kafka-wire-apt.lock sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$$0" >/dev/null'

# kcat (Debian's package) is a peer of tests/cluster (`kcat -L` against the cluster's view);
# installed with apt-get when missing (the machines and CI run as root).
KCAT_STAMP := $(VENV)/.kcat
$(KCAT_STAMP): $(STAMP)
	@command -v kcat >/dev/null 2>&1 || $(APT_INSTALL) kcat
	touch $(KCAT_STAMP)

install: $(STAMP) $(NODE_STAMP) $(KCAT_STAMP)

# Apache Kafka 4.4.0 (the reference broker, its tools, the 4.4 clients and Kafka Streams) with every
# jar it needs, resolved from Maven Central by Maven's dependency plugin from tools/peers/pom.xml
# into build/peers/kafka-4.4/lib (about 125 MB; Maven keeps its own cache in ~/.m2). The e2e suite
# starts real Kafka brokers from it (tests/e2e/brokers.py) and the Java drivers build against it.
PEERS_DIR := build/peers/kafka-4.4
PEERS_STAMP := $(PEERS_DIR)/.resolved
$(PEERS_STAMP): tools/peers/pom.xml
	@command -v mvn >/dev/null 2>&1 || $(APT_INSTALL) maven
	rm -rf $(PEERS_DIR)
	mvn -q -B -f tools/peers/pom.xml dependency:copy-dependencies \
		-DoutputDirectory=$(CURDIR)/$(PEERS_DIR)/lib -DincludeScope=runtime
	touch $(PEERS_STAMP)

peers: $(PEERS_STAMP)

# The compiled flavour (docs/internals/compiled.md): when a C compiler is present, mypyc compiles the
# modules listed in setup.py (the records loops, the message bases and the hot message modules) next
# to their sources (about a minute of CPU on 2 cores; docs/internals/compiled.md has the figures),
# then the guard checks mypyc's C for generic calls in hot functions (the records extension links
# libdeflate, Debian's libdeflate-dev, installed when missing). Without a compiler the package
# stays pure Python. Rebuilt when the compiled sources change.
COMPILED_STAMP := build/.compiled
COMPILED_SOURCES := setup.py $(wildcard kafka_wire/_compiled/*.py kafka_wire/_compiled/*.c kafka_wire/_compiled/recordwalk/*.[ch] kafka_wire/_compiled/columnar/*.[ch] kafka_wire/_compiled/messages/*.py kafka_wire/codec/*.py)
$(COMPILED_STAMP): $(STAMP) $(COMPILED_SOURCES)
	@if command -v "$${CC:-cc}" >/dev/null 2>&1; then \
		[ -e /usr/include/libdeflate.h ] || $(APT_INSTALL) libdeflate-dev; \
		echo "compiling the mypyc flavour (about a minute)"; \
		start=$$(date +%s); \
		KAFKA_WIRE_COMPILE=1 $(PY) setup.py -q build_ext --inplace >build.log 2>&1 || { tail -50 build.log; exit 1; }; \
		echo "compiled in $$(( $$(date +%s) - start )) s"; \
		$(PY) tools/check_mypyc_c.py; \
	else \
		echo "no C compiler: the pure-Python flavour only"; \
	fi
	mkdir -p build && touch $(COMPILED_STAMP)

compile: $(COMPILED_STAMP)

# Bytecode is compiled up front (``compileall`` skips what is current): an editable install does
# not, and with PYTHONDONTWRITEBYTECODE set the 97k generated lines would be compiled at every start.
# The main job: a Kafka broker on 127.0.0.1:9092 with its data in ./data (Ctrl-C stops it).
run: $(STAMP) $(COMPILED_STAMP)
	$(PY) -m compileall -q kafka_wire
	$(VENV)/bin/kafka-wire serve --host 127.0.0.1 --port 9092 --data-dir data

# The whole test suite: the static checks (generated code up to date, lint, formatting, types:
# mypy over the package, tests, tools, bench and fuzz) and pytest (the whole suite on the compiled
# flavour and, beside it, what differs between flavours on pure Python) run side by side, through
# tools/test_flavours.py; it fails if any of them fails.
# What every run needs (pip, Maven's download of Kafka, kcat) is built first by a sub-make with two
# jobs; what only the compiled run needs (the mypyc flavour, npm's native addons) is built at the
# start of that run (test-compiled-prerequisites), while the pure run and the checks go on beside it.
test:
	@$(MAKE) --no-print-directory -j2 test-prerequisites
	$(PY) -m compileall -q kafka_wire
	$(PY) tools/test_flavours.py --checks --build-compiled

test-prerequisites: $(STAMP) $(KCAT_STAMP) $(PEERS_STAMP)

test-compiled-prerequisites: $(NODE_STAMP) $(COMPILED_STAMP)

# The static checks alone (what `make test` runs beside pytest).
checks: $(STAMP)
	$(PY) -m kafka_wire.schema.importer --check
	$(PY) -m kafka_wire.codegen --check
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

regen: $(STAMP)
	$(PY) -m kafka_wire.schema.importer
	$(PY) -m kafka_wire.codegen
	$(PY) -m tools.docs

# The generated pages of docs/reference/ (protocol coverage, state diagrams, configuration tables),
# written from the code's own tables by tools/docs/; tests/test_docs.py checks they are current.
docs: $(STAMP)
	$(PY) -m tools.docs

# Re-record the golden request frames of tests/data/captures from the real clients (tools/record_captures.py).
captures: $(STAMP) $(NODE_STAMP) $(PEERS_STAMP)
	$(PY) tools/record_captures.py

# The simulator's long run (docs/benchmarks/simulation.md): 10,000 seeds of 5,000 events on three
# nodes, every fault kind, on every core; about an hour and a half on two cores. make test runs a
# fixed set of 30 seeds (tests/sim/test_seeds.py).
simulate-long: $(STAMP) $(COMPILED_STAMP)
	$(VENV)/bin/kafka-wire simulate --seeds 1..10000 --events 5000 --nodes 3

# The long fuzzing run (docs/benchmarks/fuzzing.md): every harness of fuzz/ under atheris for
# FUZZ_SECONDS each, two at a time, on the pure flavour (atheris sees Python code only; the compiled
# flavour is checked against the pure one by tests/codec/test_native.py). Sized for at least
# 10 million executions in all: the rates measured there add up to about 9,500 executions per
# second of each harness on two shared cores (about 17,800 on idle ones), so 1,800 s each gives
# about 17 million (30 million); four rounds, about 2 h of wall time. Corpora, findings and logs
# in build/fuzz, the summary in build/fuzz/long.json. make test runs each harness briefly
# (tests/fuzz/test_short_runs.py).
FUZZ_SECONDS ?= 1800
fuzz-long: $(STAMP)
	KAFKA_WIRE_PURE=1 nice -n 10 $(PY) fuzz/run.py --seconds $(FUZZ_SECONDS) --jobs 2 --json build/fuzz/long.json

bench: $(STAMP) $(COMPILED_STAMP)
	$(PY) bench/bench_metadata.py
	$(PY) bench/bench_produce_fetch.py
	$(PY) bench/bench_records.py
	$(PY) bench/bench_spark.py --records 1000000

# The whole test suite in one flavour: compiled extensions ignored / required.
test-pure: $(STAMP) $(NODE_STAMP) $(KCAT_STAMP) $(PEERS_STAMP)
	KAFKA_WIRE_PURE=1 KAFKA_WIRE_EXPECT_FLAVOUR=pure $(PY) -bb -m pytest -q -p no:cacheprovider

test-compiled: $(STAMP) $(NODE_STAMP) $(KCAT_STAMP) $(PEERS_STAMP) $(COMPILED_STAMP)
	KAFKA_WIRE_EXPECT_FLAVOUR=compiled $(PY) -bb -m pytest -q -p no:cacheprovider

clean:
	rm -rf $(VENV) build build.log *.egg-info
	find kafka_wire -name '*.so' -delete

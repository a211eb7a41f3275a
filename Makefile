# nodegate: two commands do all set-up on a fresh machine: `make demo` and `make test`.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_XDIST ?=

.PHONY: venv demo test test-fast bench samples clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

## demo: the suite with --replay on the bundled sample fleet; writes reports/ (exit 0 even with findings)
demo: $(STAMP)
	rm -rf reports/report.html reports/junit.xml reports/rma.csv reports/rma.json reports/bundles
	@rc=0; $(BIN)/python -m pytest suites -p no:cacheprovider --replay inventories/samples --reports-dir reports \
	  -q --tb=no -rN || rc=$$?; \
	echo "pytest exit $$rc: 1 means findings, which the sample fleet has on purpose"; \
	test $$rc -le 1 && test -s reports/report.html && test -s reports/junit.xml && test -s reports/rma.csv \
	  && echo "demo: reports written to reports/ (report.html, junit.xml, rma.csv, rma.json, bundles/)"

## test: the project's own tests (real sshd fleet tests need root, openssh-server and busybox-static)
test: $(STAMP)
	$(BIN)/python -m pytest tests -p no:cacheprovider $(PYTEST_XDIST) -q

## bench: simulated SSH fleets of 16, 64, 256 nodes; BENCH_ARGS=--scale: --replay at 256, 1,024, 4,096 nodes
BENCH_ARGS ?=
bench: $(STAMP)
	$(BIN)/python bench/run.py $(BENCH_ARGS)

samples: $(STAMP)
	$(BIN)/python tools/capture_to_bundle.py
	$(BIN)/python tools/build_samples.py

clean:
	rm -rf $(VENV) reports/*.html reports/*.xml reports/bundles .pytest_cache

# nodegate: two commands do all set-up on a fresh machine: `make demo` and `make test`.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# four xdist workers on the machine's two cores: much of the suite waits on subprocesses, SSH and
# deadlines (with -n 2 the cores were busy 46 % of the run: 12.5 CPU-min in 13 min 40 s; with -n 4,
# 66 %: 11.4 CPU-min in 8 min 37 s; docs/contributing.md); --dist loadgroup is scheduled by
# tests/conftest.py: one unit per test file (or xdist_group), the heaviest first.
# PYTEST_XDIST= runs the tests in one process.
PYTEST_XDIST ?= -n 4 --dist loadgroup
# the demo's own folder: a live run's evidence (reports/bundles/) is never touched by make
DEMO := reports/demo

.PHONY: venv demo test test-fast bench samples fleet fleet-stop clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

## demo: the installed suites (`nodegate`) with --replay on the bundled sample fleet; writes
## reports/demo/ and nothing else (exit 0 even with findings)
demo: $(STAMP)
	rm -rf $(DEMO)
	@rc=0; $(BIN)/nodegate --replay inventories/samples --reports-dir $(DEMO) \
	  -q --tb=no -rN || rc=$$?; \
	echo "nodegate exit $$rc: 1 means findings, which the sample fleet has on purpose"; \
	test $$rc -le 1 && test -s $(DEMO)/report.html && test -s $(DEMO)/junit.xml && test -s $(DEMO)/rma.csv \
	  && echo "demo: reports written to $(DEMO)/ (report.html, junit.xml, rma.csv, rma.json, bundles/)"

## test: the project's own tests (docs/contributing.md, "The test suite"); -rs prints every skip
## reason (the SSH fleet tests need root and the system packages of tools/system_packages.txt, which
## this target installs first when it runs as root with apt-get); --durations=25 the
## slowest (a new slow test shows there). Any pytest exit but 0 fails, 5 (no test ran) included.
test: $(STAMP)
	@$(PY) tools/system_packages.py ensure
	$(BIN)/python -m pytest tests -p no:cacheprovider $(PYTEST_XDIST) -q -rs --durations=25

## bench: simulated SSH fleets of 16, 64, 256 nodes (needs root, openssh-server, busybox-static, dash);
## BENCH_ARGS=--scale: --replay at 256, 1,024, 4,096 nodes (needs nothing but the venv);
## BENCH_ARGS='--scale --repeat 3': each size 3 times, in turn, medians (the ratios on a noisy machine)
## BENCH_ARGS='--paired 4096,256': one 4,096-node replay with 256-node ones back to back beside it (same spells)
## BENCH_ARGS=--install: another project's pytest start-up with and without nodegate installed (needs nothing but the venv)
BENCH_ARGS ?=
bench: $(STAMP)
	@case "$(BENCH_ARGS)" in *--scale*|*--paired*|*--install*) ;; *) \
	why=$$($(BIN)/python -c "from tools.fleet import sshd_available; print(sshd_available() or '')"); \
	if [ -n "$$why" ]; then echo "make bench needs the simulated fleet: $$why"; \
	  echo "install: apt-get install openssh-server openssh-client busybox-static dash (as root)"; \
	  echo "or run the replay-only scale bench: make bench BENCH_ARGS=--scale"; exit 2; fi;; esac
	$(BIN)/python bench/run.py $(BENCH_ARGS)

## fleet: a simulated fleet of N nodes (default 4: a healthy H100 node, then one fault each) served by
## real OpenSSH sshd on 127.x loopback addresses, left running; writes fleet/inventory.yml and
## fleet/known_hosts and prints the nodegate command that checks it over SSH. Needs root,
## openssh-server, busybox-static, dash. `make fleet-stop` or `make clean` stops it.
N ?= 4
fleet: $(STAMP)
	$(BIN)/python -m tools.fleet.cli start --nodes $(N) --out fleet

fleet-stop:
	@if [ -f fleet/fleet.json ] && [ -x $(BIN)/python ]; then $(BIN)/python -m tools.fleet.cli stop --out fleet; fi
	@# any other simulated fleet left behind (a bench or test killed before its cleanup): tools/reaper.py
	@if [ -x $(BIN)/python ] && [ -d /srv/nodegate-fleet ]; then $(BIN)/python -m tools.reaper --all; fi

samples: $(STAMP)
	$(BIN)/python tools/capture_to_bundle.py
	$(BIN)/python tools/build_samples.py

## clean: a running `make fleet` (stopped), the venv, caches (__pycache__ included) and every report file
## make itself writes (the demo, bench*.json); a live run's reports and evidence stay
clean: fleet-stop
	rm -rf $(VENV) $(DEMO) fleet reports/bench.json reports/bench-scale.json reports/bench-paired.json \
	  reports/bench-install.json .pytest_cache .hypothesis *.egg-info
	find . -name __pycache__ -type d -not -path './.git/*' -prune -exec rm -rf {} +

# The one entry point for people and CI.
CARGO ?= cargo
LISTEN ?= 127.0.0.1:18000
NODE ?= demo-node
PYTHON ?= python3

# `make help` lists the targets with the `## ` text on their line.
.PHONY: help bins build test test-rust spec-audit examples outside conformance tutorial browser browser-setup page-screenshot screenshot-fonts interop interop-js lint golden run-server run-client bench bench-10k bench-status fleet fleet-shards k8s-manifests package python-package node-package contracts

help: ## this list
	@awk -F':.*## ' '/^[a-z0-9-]+:.*## /{printf "  %-16s %s\n",$$1,$$2}' $(MAKEFILE_LIST)

build: ## build both binaries (debug)
	$(CARGO) build --workspace --all-targets

# Rust tests first: interop needs a server that already passes its own tests.
test: test-rust spec-audit examples outside conformance tutorial browser fleet k8s-manifests contracts package python-package node-package ## everything CI runs: Rust tests, the spec audit, examples, outside crate, conformance, tutorials and labs, browser, fleet, manifests, JSON contracts, the crates, wheel and npm packages, interop
	$(MAKE) interop

test-rust: ## cargo test for the whole workspace (unit, e2e over loopback, architecture)
	$(CARGO) test --workspace

# Every cargo example (client/examples/*.rs, server/examples/*.rs), each against a server it starts itself; each
# exits non-zero if what it shows did not happen. Built as `cargo test --workspace` builds them
# (same features, no rebuild), then run.
EXAMPLES = $(basename $(notdir $(wildcard client/examples/*.rs server/examples/*.rs)))

examples: ## run every cargo example (client and server), each against a server it starts
	$(CARGO) build --workspace --examples
	@set -e; for example in $(EXAMPLES); do \
		echo "== cargo run --example $$example"; $(BIN_DIR)/examples/$$example; done

# A crate outside the workspace (tests/outside) that uses the server's testkit and the client
# library with default features off, as another project would, with the workspace's pins
# (same_pins.py, then --locked). It shares the workspace's target dir: the dependencies it
# builds with the same features and profile are the workspace's, not compiled a second time.
outside: ## a crate outside the workspace tests a client with the testkit, default features off
	$(PYTHON) tests/outside/same_pins.py
	cd tests/outside && CARGO_TARGET_DIR="$(abspath $(or $(CARGO_TARGET_DIR),target))" \
		$(CARGO) test --locked

# The two binaries: `xdsloop-client check --fixtures` judges `xdsloop-server` on a temp copy of
# fixtures/demo; every check must pass and the directory come back byte-identical. Then
# `check --output junit` against the server with a push storm, read by PyPI's junitparser (in
# tests/conformance/.venv, created once from the pinned requirements.txt); broken copies refused.
conformance: bins ## xdsloop-client check judges xdsloop-server; its JUnit output read by junitparser
	BIN_DIR="$(BIN_DIR)" $(PYTHON) tests/conformance/run.py
	BIN_DIR="$(BIN_DIR)" $(PYTHON) tests/conformance/junit.py

# The spec as data (proto/spec/xds_protocol.yaml) against discovery.proto's comments, as the
# pinned envoy-types crate ships them: every keyword sentence accounted for once, every quote
# found. Then a copy with one quote altered must be refused. (The rst half needs the pinned
# xds_protocol.rst: `tests/spec/audit.py --rst FILE`.)
spec-audit: ## the spec file audited against discovery.proto's comments; a broken copy refused
	$(PYTHON) tests/spec/audit.py
	@broken=$$(mktemp); \
	sed 's/Must be consistent with the type_url in the/Must be consistent with the type URL in the/' \
		proto/spec/xds_protocol.yaml > $$broken; \
	if $(PYTHON) tests/spec/audit.py --yaml $$broken > /dev/null 2>&1; then \
		echo "spec-audit: a copy with an altered quote passed"; rm -f $$broken; exit 1; fi; \
	rm -f $$broken; echo "spec-audit: a copy with an altered quote is refused"

# The tutorial (docs/tutorial.md and its Chinese, docs/zh/tutorial.md) and the day-12 labs
# (docs/lab-day12.md, docs/zh/lab-day12.md), command by command, against the two binaries: each
# must print what the page shows (times, ports, hashes aside). Then the checker's self-test:
# broken copies of both tutorials fail.
TUTORIALS = docs/tutorial.md docs/zh/tutorial.md
LABS = docs/lab-day12.md docs/zh/lab-day12.md
tutorial: bins ## run every command of the tutorials and day-12 labs (English and Chinese)
	BIN_DIR="$(BIN_DIR)" $(PYTHON) tests/tutorial/run.py $(TUTORIALS) $(LABS)
	BIN_DIR="$(BIN_DIR)" $(PYTHON) tests/tutorial/run.py --self-test $(TUTORIALS)

# The live page (GET / on the admin endpoint) in a real headless Chromium, against the two
# binaries: live updates after an edit, a rejected edit, a NACKing client, a stream's
# conversation, in English and in Chinese (`?lang=zh`, the language switch). Installs Debian's chromium once if it is missing (as the interop venv is made).
browser: bins browser-setup ## the live page in headless Chromium (installed when missing)
	BIN_DIR="$(BIN_DIR)" $(PYTHON) tests/browser/run.py

browser-setup:
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || \
		{ echo "installing chromium (Debian package) for make browser"; \
		  $(if $(filter 0,$(shell id -u)),,sudo) apt-get update -qq && \
		  $(if $(filter 0,$(shell id -u)),,sudo) apt-get install -y -qq chromium; }

# The README's screenshot of the page, made by the same run. The page's language switch says
# 中文: without a CJK font headless Chromium draws empty boxes, so Debian's fonts-noto-cjk is
# installed when fontconfig knows no Chinese font.
page-screenshot: bins browser-setup screenshot-fonts ## regenerate docs/img/page.png
	BIN_DIR="$(BIN_DIR)" $(PYTHON) tests/browser/run.py --screenshot docs/img/page.png

screenshot-fonts:
	@fc-list :lang=zh family 2>/dev/null | grep -q . || \
		{ echo "installing fonts-noto-cjk (Debian package) for make page-screenshot"; \
		  $(if $(filter 0,$(shell id -u)),,sudo) apt-get update -qq && \
		  $(if $(filter 0,$(shell id -u)),,sudo) apt-get install -y -qq fonts-noto-cjk; }

# A sharded fleet, end to end: 4 `xdsloop-client fleet --shard I/4` processes of 50 nodes against
# one xdsloop-server, `fleet merge` checked against all raw samples, its refusals (docs/fleet.md).
fleet: bins ## a sharded fleet end to end, shards merged and checked
	BIN_DIR="$(BIN_DIR)" $(PYTHON) tests/fleet/run.py

# The same at scale, not in `make test` (about 2 minutes of both CPUs): 4 shards of 2,500 nodes
# against 10,000 nodes in one process (before and after, for the noise) on one warmed-up release
# server; prints the table of docs/fleet.md.
fleet-shards: ## the sharded fleet at scale (not in make test)
	$(CARGO) build --release -p xdsloop-server -p xdsloop-client
	BIN_DIR="$(or $(CARGO_TARGET_DIR),target)/release" $(PYTHON) tests/fleet/run.py --full

# Every manifest in deploy/k8s/ against the Kubernetes schemas, offline (PyPI kubernetes-validate
# in tests/k8s/.venv, created once from the pinned requirements.txt), broken copies refused, and
# the manifests' command lines run by the real binaries.
k8s-manifests: bins ## validate deploy/k8s against the Kubernetes schemas, offline
	BIN_DIR="$(BIN_DIR)" $(PYTHON) tests/k8s/validate.py

# Every JSON document the tools write (/status, transcripts, check and fleet output) made by the
# two binaries and held to docs/contracts.md: its schema version and its fields.
contracts: bins ## the JSON documents' schema versions and fields against docs/contracts.md
	BIN_DIR="$(BIN_DIR)" $(PYTHON) tests/contracts/check.py

# The crates as crates.io would get them: `cargo package` packs every published crate (not
# xdsloop-tests, xdsloop-bench) and builds each from its .crate alone, the workspace's
# unpublished siblings served from a local registry. --allow-dirty: a working tree with edits (or
# CI's build products) is packed as it is; nothing is published.
# The verification builds in the workspace's target dir under the default dev profile, since a
# packaged crate carries no [profile]: PACKAGE_PROFILE gives it the workspace's, so the
# dependencies it shares with the workspace's builds are not compiled a second time. It also
# leaves the packaged crates' binaries in target/debug/: the `cargo build` after it puts the
# workspace's back (the ones that name their git revision), for the targets that run them next.
PUBLISHED_EXCLUDE = --exclude xdsloop-tests --exclude xdsloop-bench
PACKAGE_PROFILE = --config 'profile.dev.debug="line-tables-only"' \
	--config 'profile.dev.package."*".debug=false' --config 'profile.dev.package."*".opt-level=1'
# Between the two, target/debug/ holds the binaries built from the .crate files, outside any
# repository: they must print the version alone.
VERSION = $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
# Cargo unpacks the local registry's .crate files under CARGO_HOME once per name and version and
# reuses that copy on the next run: at an unchanged version it would verify against the sources
# of an earlier run. The stale copies go first (only the workspace's crates, never crates.io's).
CARGO_HOME_DIR = $(or $(CARGO_HOME),$(HOME)/.cargo)
package: ## cargo package every published crate, with its verification build
	rm -rf $(CARGO_HOME_DIR)/registry/src/-*/xdsloop-* $(CARGO_HOME_DIR)/registry/cache/-*/xdsloop-*
	$(CARGO) package --workspace $(PUBLISHED_EXCLUDE) --allow-dirty $(PACKAGE_PROFILE)
	@for bin in xdsloop-server xdsloop-client; do \
		line="$$($(BIN_DIR)/$$bin --version)"; \
		if [ "$$line" != "$$bin $(VERSION)" ]; then \
			echo "the packaged $$bin says '$$line' to --version, not '$$bin $(VERSION)'"; exit 1; fi; \
		echo "packaged $$bin --version: $$line"; done
	$(CARGO) build --workspace --bins

# The wheel (docs/python.md): maturin builds it (dev profile) with both binaries, it is installed
# into a fresh venv with nothing of the project on the path, and tests/python runs there with
# pytest: gRPC's xDS client (grpcio) against the plugin's xds_server. maturin lives in
# target/python-build (made once, pinned); the test venv is new every run.
python-package: ## build the xdsloop wheel, install it in a fresh venv, run its pytest suite with grpcio
	CARGO="$(CARGO)" $(PYTHON) tests/python/run.py

# The npm packages (docs/node.md): `npm pack` of @xdsloop/linux-x64 (this build's binaries) and
# xdsloop, both tarballs installed into a fresh project with @grpc/grpc-js-xds (pinned in
# tests/node/package-lock.json), then `node --test` there.
node-package: bins ## pack the npm packages, install them in a fresh project, run node --test with grpc-js-xds
	BIN_DIR="$(BIN_DIR)" $(PYTHON) tests/node/run.py

# A real third-party xDS client (gRPC's proxyless client from PyPI grpcio) follows the server's
# hot pushes. Creates tests/interop/.venv once (pinned requirements.txt), then reuses it.
interop: ## gRPC's proxyless xDS client (grpcio) against the server
	CARGO="$(CARGO)" $(PYTHON) tests/interop/run.py

# The cookbook's recipes with gRPC's Node xDS client (@grpc/grpc-js-xds, pinned in
# tests/interop/js/package-lock.json, installed once with npm ci). Not part of `make test`: its
# two minutes or so (docs/scenarios.md has the measured times) would bring `make test`, about
# 27 minutes on CI's two cores, within a minute of the 30 it must stay under: too close to
# absorb a slow run. docs/scenarios.md's matrix shows what it found.
interop-js: ## the scenario cookbook with gRPC's Node xDS client (not in make test)
	CARGO="$(CARGO)" $(PYTHON) tests/interop/run.py --client grpc-js

# Rewrites the golden transcripts (tests/e2e/golden/*.jsonl) from a new run of their session,
# after an intended change of what goes on the wire; review the change with `git diff` before
# committing it. `make test` compares against them (tests/e2e/transcript_golden.rs).
golden: ## rewrite the golden transcripts after an intended wire change
	XDSLOOP_BLESS=1 $(CARGO) test -p xdsloop-tests --test e2e transcript_golden_session

# The architecture checks read the source tree (layers, one-way module dependencies, no I/O in
# the protocol layers, docs' source links); they run in `make test` too.
lint: ## rustfmt, clippy -D warnings, the architecture checks
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) test -q -p xdsloop-tests --test architecture

# Both run targets build the workspace's binaries together: `cargo run -p X` would resolve a
# different feature set per package and rebuild the dependency tree for the second one.
BIN_DIR = $(or $(CARGO_TARGET_DIR),target)/debug

bins:
	$(CARGO) build --workspace --bins

run-server: bins ## serve fixtures/demo on LISTEN (127.0.0.1:18000), hot-pushing every edit
	$(BIN_DIR)/xdsloop-server --fixtures fixtures/demo --listen $(LISTEN)

run-client: bins ## subscribe to LISTEN as NODE (demo-node) and print each applied update
	$(BIN_DIR)/xdsloop-client --server $(LISTEN) --node-id $(NODE)

# Benchmarks print numbers and assert no timings.
# Release builds of the server and the bench, then edit to all ACKed first (N = 1000, C = 100,
# new files renamed into place), the matrix (N = 100,1000,5000 nodes, C = 1000 clusters x E = 10
# endpoints, 3 runs each, medians) and the single numbers (Delta: N = 5000, C = 1000). Table on the
# terminal, JSON in bench-results/bench.json. `make bench QUICK=1` runs a small matrix in seconds;
# RUNS=, NODES=100,1000, CLUSTERS= and ENDPOINTS= override the defaults. The N=1000 cell also runs
# over TLS right after its plaintext run (TLS_NODES=N moves it, TLS_NODES=0 drops it). The last
# single numbers are the cost of --record (N = 1000, C = 100; xdsloop-bench --record-only alone)
# and of admin load: pushes to N = 2000 streams with 25 /status pollers and 25 /events streams
# (xdsloop-bench --admin-load-only alone).
bench: ## benchmarks (release): edit to ACK, the N-client matrix, admin load
	$(CARGO) build --release -p xdsloop-server -p xdsloop-bench
	$(CARGO) run --release -q -p xdsloop-bench -- $(if $(QUICK),--quick) \
		$(if $(RUNS),--runs $(RUNS)) $(if $(NODES),--nodes $(NODES)) \
		$(if $(CLUSTERS),--clusters $(CLUSTERS)) $(if $(ENDPOINTS),--endpoints $(ENDPOINTS)) \
		$(if $(TLS_NODES),--tls-nodes $(TLS_NODES))

# The 10,000-client cell alone (N = 10,000 SotW, C = 1,000; one run, several minutes).
bench-10k: ## the 10,000-client cell alone
	$(CARGO) build --release -p xdsloop-server -p xdsloop-bench
	$(CARGO) run --release -q -p xdsloop-bench -- --matrix-only --nodes 10000 --runs 1 --tls-nodes 0 \
		--output bench-results/bench-10k.json

# /status and the `status` table with 1,000 open ADS streams (all four types ACKed), in-process.
bench-status: ## /status and the status table with 1,000 streams
	$(CARGO) bench -p xdsloop-tests --bench status

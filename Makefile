# The one entry point for people and CI.
CARGO ?= cargo
LISTEN ?= 127.0.0.1:18000
NODE ?= demo-node
PYTHON ?= python3

.PHONY: build test test-rust interop lint run-server run-client bench bench-status

build:
	$(CARGO) build --workspace --all-targets

# Rust tests first: interop needs a server that already passes its own tests.
test: test-rust
	$(MAKE) interop

test-rust:
	$(CARGO) test --workspace

# A real third-party xDS client (gRPC's proxyless client from PyPI grpcio) follows the server's
# hot pushes. Creates tests/interop/.venv once (pinned requirements.txt), then reuses it.
interop:
	CARGO="$(CARGO)" $(PYTHON) tests/interop/run.py

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

run-server:
	$(CARGO) run -p xdsloop-server -- --fixtures fixtures/demo --listen $(LISTEN)

run-client:
	$(CARGO) run -p xdsloop-client -- --server $(LISTEN) --node-id $(NODE)

# Benchmarks print numbers and assert no timings.
bench: bench-status

# /status and the `status` table with 1,000 open ADS streams (all four types ACKed).
bench-status:
	$(CARGO) bench -p xdsloop-tests --bench status

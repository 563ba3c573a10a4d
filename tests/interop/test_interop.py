"""gRPC's real xDS clients against xdsloop-server, every server an `XdsServer` from the xdsloop
pytest plugin: the main flow (hot pushes, rejected edits, CSDS, a TTL, scenario faults,
federation, the judge), the TLS phase, and each cookbook recipe. run.py starts this file with
pytest; each test prints a PASS/FAIL line per check and fails if any check failed."""

from __future__ import annotations

import sys

import pytest

import harness
import recipes
import run


def checked(report: run.Report, procs: list) -> None:
    if report.failed:
        print("\n".join(p.tail() for p in procs), file=sys.stderr)
    assert report.failed == 0, f"{report.failed} of {report.passed + report.failed} checks failed"
    assert report.passed > 0, "no check ran"


def test_grpcio_follows_the_server(interop, xds_server_factory, clients):
    if interop.client != "grpcio":
        pytest.skip("the main flow runs gRPC C-core (grpcio)")
    report = run.Report()
    run.main_flow(report, interop.python, xds_server_factory, interop.work, interop.ports,
                  clients)
    checked(report, clients)


def test_grpcio_over_mtls(interop, xds_server_factory, clients):
    if interop.client != "grpcio":
        pytest.skip("the TLS phase runs gRPC C-core (grpcio)")
    report = run.Report()
    run.tls_flow(report, interop.python, xds_server_factory, interop.work, interop.ports,
                 clients)
    checked(report, clients)


@pytest.mark.parametrize("name", list(recipes.RECIPES))
def test_recipe(name, interop, xds_server_factory):
    report = run.Report()
    env = recipes.Env(python=interop.python, servers=xds_server_factory, work=interop.work,
                      ports=interop.ports, report=report)
    if interop.client == "grpc-js":
        env.client = harness.ensure_node_modules(run.HERE / "js")
        env.client_label = "grpc-js"
    recipes.run_all(env, [name])
    checked(report, env.procs)

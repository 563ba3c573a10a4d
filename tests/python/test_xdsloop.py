"""The installed `xdsloop` package against gRPC's real xDS client (grpcio): a hot push, a NACK,
a fault scenario, the awaits' timeouts, the pytest plugin's fixtures and failure report, and the
binaries the wheel put on the environment's PATH."""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import xdsloop
from xdsloop import WaitTimeout, XdsServer, find_binary

from conftest import NODE, endpoints, greeter

FIRST_CALL_TIMEOUT_S = 30.0
STATIC = {"@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster", "name": "static",
          "type": "STATIC"}


def test_the_package_and_both_binaries_come_from_the_installed_wheel():
    scripts = Path(sysconfig.get_path("scripts"))
    assert Path(xdsloop.__file__).resolve().is_relative_to(Path(sys.prefix).resolve()), \
        f"xdsloop imported from {xdsloop.__file__}, not from the environment {sys.prefix}"
    assert find_binary() == scripts / "xdsloop-server"
    version = importlib.metadata.version("xdsloop")
    for binary in ("xdsloop-server", "xdsloop-client"):
        out = subprocess.run([str(scripts / binary), "--version"], capture_output=True,
                             text=True, check=True).stdout
        assert re.fullmatch(rf"{binary} {re.escape(version)}( \(git [0-9a-f]{{7,}}\))?\n", out), out


def test_grpc_follows_a_hot_push(xds_server: XdsServer, backends, grpc_client):
    xds_server.set_resources(greeter(backends["A"]))
    calls = grpc_client(xds_server)
    assert calls.wait_run("A", timeout=FIRST_CALL_TIMEOUT_S), calls.answers()[-10:]
    first = xds_server.await_ack(NODE, "eds")

    mark, since = xds_server.mark(), calls.mark()
    served = xds_server.set_resources(greeter(backends["B"]))
    version = xds_server.version(NODE, "eds")
    assert version != first.version and served["generation"] >= 2
    ack = xds_server.await_ack(NODE, "eds", version, since=mark)
    assert ack.stream == first.stream, "one ADS stream for the whole run"
    assert calls.wait_run("B", since), calls.answers(since)

    transcript = xds_server.record(xds_server.workdir / "copy.jsonl")
    lines = [json.loads(l) for l in transcript.read_text().splitlines()]
    assert lines[0]["schema"] == "xdsloop.transcript.v1"
    acks = [l for l in lines if l.get("node") == NODE and l.get("verdict") == "ack"
            and l.get("type") == "eds"]
    assert [a["version"] for a in acks][-1] == version


def test_grpc_nacks_an_endpoint_it_cannot_use_and_keeps_the_last_good_one(
        xds_server_factory, backends, grpc_client):
    server = xds_server_factory(resources=greeter(backends["A"]))
    calls = grpc_client(server)
    assert calls.wait_run("A", timeout=FIRST_CALL_TIMEOUT_S), calls.answers()[-10:]
    server.await_ack(NODE, "eds")

    mark, since = server.mark(), calls.mark()
    # A port above 65535: the proto allows it (uint32), gRPC rejects the endpoint.
    server.write_fixture("resources.json", greeter(backends["A"])[:3] + [endpoints(70000)])
    nack = server.await_nack(NODE, "eds", since=mark)
    assert nack.version == server.version(NODE, "eds")
    assert nack.message, "gRPC says why"
    row = next(t for s in server.status(NODE)["streams"] for t in s["types"] if t["type"] == "eds")
    assert row["state"] == "NACKED" and row["last_nack"]["nonce"] == nack.nonce
    made = calls.wait_count(20, since)
    assert made == ["A"] * 20, made


def test_a_scenario_corrupts_the_next_push_and_clearing_it_resyncs(
        xds_server_factory, backends, grpc_client):
    server = xds_server_factory(name="faulty", resources=greeter(backends["A"]))
    calls = grpc_client(server)
    assert calls.wait_run("A", timeout=FIRST_CALL_TIMEOUT_S), calls.answers()[-10:]
    server.await_ack(NODE, "eds")

    section = server.scenario([{"id": "corrupt-eds", "match": {"node": NODE, "type": "eds"},
                                "times": 1, "do": {"corrupt": {"resource": "greeter"}}}])
    assert [r["id"] for r in section["rules"]] == ["corrupt-eds"]
    mark, since = server.mark(), calls.mark()
    server.set_resources(greeter(backends["B"]))
    nack = server.await_nack(NODE, "eds", since=mark)
    assert server.fired("corrupt-eds") == 1
    assert calls.wait_count(20, since) == ["A"] * 20

    since = calls.mark()
    server.clear_scenario()
    assert server.fired("corrupt-eds") is None
    # No fixture edit: DELETE /scenario resyncs, and gRPC takes the good endpoints.
    assert calls.wait_run("B", since), calls.answers(since)
    server.await_ack(NODE, "eds", server.version(NODE, "eds"), since=mark)
    assert nack.version == server.version(NODE, "eds")


def test_a_refused_scenario_says_why_and_keeps_the_rules_in_force(xds_server: XdsServer):
    with pytest.raises(xdsloop.ScenarioRefused, match="wen"):
        xds_server.scenario("version: 1\nrules:\n  - id: x\n    wen: {}\n    do: {drop: {}}\n")
    assert xds_server.status()["scenario"]["rules"] == []


def test_a_rejected_edit_names_the_file_and_line(xds_server: XdsServer):
    with pytest.raises(xdsloop.FixtureRejected, match=r"broken\.yaml: line \d+, column \d+"):
        xds_server.write_fixture("broken.yaml", "resources:\n- [\n")


@pytest.mark.xdsloop(resources=[STATIC])
def test_an_await_that_times_out_says_what_the_node_did(xds_server: XdsServer):
    assert xds_server.status()["snapshot"]["resources"] == 1
    client = subprocess.Popen([str(Path(sysconfig.get_path("scripts")) / "xdsloop-client"),
                               "--server", xds_server.address, "--node-id", "n1",
                               "--types", "cds"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        held = xds_server.await_ack("n1", "cds").version
        with pytest.raises(WaitTimeout) as err:
            xds_server.await_ack("n1", "cds", "v-never", timeout=1)
        assert f'ack version "{held}"' in str(err.value), str(err.value)
        with pytest.raises(WaitTimeout, match="sent no cds request"):
            xds_server.await_nack("nobody", "cds", timeout=0.5)
    finally:
        client.terminate()
        client.wait(5)


def test_a_failing_test_shows_the_server_log(pytester: pytest.Pytester):
    pytester.makepyfile("""
        def test_fails(xds_server_factory):
            xds_server_factory(name="primary")
            assert False, "on purpose"
    """)
    result = pytester.runpytest_subprocess("--xdsloop-server", str(find_binary()))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*xdsloop-server log: primary*", "*xDS listening on 127.0.0.1:*"])


def test_the_guides_complete_test_passes(pytester: pytest.Pytester):
    guide = (Path(__file__).parent / "python.md").read_text()
    section = guide.split("## A complete test", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    pytester.makepyfile(test_guide=code)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)

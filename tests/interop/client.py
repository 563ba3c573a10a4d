"""gRPC's proxyless xDS client, calling `xds:///greeter` in a loop.

Usage: client.py TARGET [INTERVAL_SECONDS]
The bootstrap comes from GRPC_XDS_BOOTSTRAP (gRPC reads it itself). One channel is kept for the
whole run, so every change the harness sees arrives as an xDS push on the same ADS stream.
Prints one line per call: `SEQ OK NAME` or `SEQ ERR CODE DETAILS`. Before the first call it
prints `csds PORT`: gRPC's own Client Status Discovery Service, serving what this process's xDS
client holds (grpcio-csds reads the C-core cache, so it must run in the same process).
Runs until it is terminated (SIGTERM from the harness, by pid).

Two settings for the cookbook's recipes (recipes.py), from the environment:
- INTEROP_WAIT_FOR_READY=0: calls fail at once while the channel cannot route (so the error
  gRPC gives, e.g. a resource that does not exist, is printed) instead of waiting for a route
  until their deadline;
- INTEROP_THEN_TARGET=xds:///other with INTEROP_THEN_WHEN=PATH: once PATH exists, a second
  channel to that target is opened in this same process (the same xDS client), and each
  round also calls it, printing `SEQ OK NAME then` / `SEQ ERR CODE then DETAILS`.
"""

import os

import sys
import time
from concurrent import futures

import grpc
import grpc_csds

METHOD = "/xdsloop.interop.Greeter/Hello"
# Bounds one call: long enough for the first xDS resolution, short enough that a stuck call
# shows up as an error line instead of silence.
CALL_TIMEOUT_S = 2.0


def serve_csds() -> grpc.Server:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    grpc_csds.add_csds_servicer(server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(f"csds {port}", flush=True)
    return server


def call(hello, seq: int, wait: bool, label: str = "") -> str:
    suffix = f" {label}" if label else ""
    try:
        reply = hello(b"", timeout=CALL_TIMEOUT_S, wait_for_ready=wait)
        return f"{seq} OK {reply.decode(errors='replace')}{suffix}"
    except grpc.RpcError as err:
        details = (err.details() or "").replace("\n", " ")
        return f"{seq} ERR {err.code().name}{suffix} {details}"


def main() -> int:
    target = sys.argv[1]
    interval = float(sys.argv[2]) if len(sys.argv) > 2 else 0.05
    wait = os.environ.get("INTEROP_WAIT_FOR_READY", "1") != "0"
    then_target = os.environ.get("INTEROP_THEN_TARGET")
    then_when = os.environ.get("INTEROP_THEN_WHEN")
    csds = serve_csds()  # noqa: F841 (kept alive for the whole run)
    then = None
    with grpc.insecure_channel(target) as channel:
        hello = channel.unary_unary(METHOD)  # raw bytes in and out: no codegen
        seq = 0
        while True:
            seq += 1
            print(call(hello, seq, wait), flush=True)
            if then is None and then_target and then_when and os.path.exists(then_when):
                then = grpc.insecure_channel(then_target).unary_unary(METHOD)
            if then is not None:
                print(call(then, seq, wait, "then"), flush=True)
            time.sleep(interval)


if __name__ == "__main__":
    sys.exit(main())

"""gRPC's proxyless xDS client, calling `xds:///greeter` in a loop.

Usage: client.py TARGET [INTERVAL_SECONDS]
The bootstrap comes from GRPC_XDS_BOOTSTRAP (gRPC reads it itself). One channel is kept for the
whole run, so every change the harness sees arrives as an xDS push on the same ADS stream.
Prints one line per call: `SEQ OK NAME` or `SEQ ERR CODE DETAILS`. Before the first call it
prints `csds PORT`: gRPC's own Client Status Discovery Service, serving what this process's xDS
client holds (grpcio-csds reads the C-core cache, so it must run in the same process).
Runs until it is terminated (SIGTERM from the harness, by pid).
"""

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


def main() -> int:
    target = sys.argv[1]
    interval = float(sys.argv[2]) if len(sys.argv) > 2 else 0.05
    csds = serve_csds()  # noqa: F841 (kept alive for the whole run)
    with grpc.insecure_channel(target) as channel:
        hello = channel.unary_unary(METHOD)  # raw bytes in and out: no codegen
        seq = 0
        while True:
            seq += 1
            try:
                reply = hello(b"", timeout=CALL_TIMEOUT_S, wait_for_ready=True)
                line = f"{seq} OK {reply.decode(errors='replace')}"
            except grpc.RpcError as err:
                details = (err.details() or "").replace("\n", " ")
                line = f"{seq} ERR {err.code().name} {details}"
            print(line, flush=True)
            time.sleep(interval)


if __name__ == "__main__":
    sys.exit(main())

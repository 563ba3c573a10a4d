"""gRPC's proxyless xDS client calling TARGET every 50 ms, one line per call: `SEQ OK NAME` or
`SEQ ERR CODE DETAILS`. The bootstrap comes from GRPC_XDS_BOOTSTRAP. A process of its own: the
C-core xDS client is one per process, made from the bootstrap it first reads."""

import sys
import time

import grpc

METHOD = "/xdsloop.test.Greeter/Hello"


def main() -> int:
    target = sys.argv[1]
    with grpc.insecure_channel(target) as channel:
        hello = channel.unary_unary(METHOD)  # raw bytes in and out: no codegen
        seq = 0
        while True:
            seq += 1
            try:
                reply = hello(b"", timeout=2.0, wait_for_ready=True)
                print(f"{seq} OK {reply.decode(errors='replace')}", flush=True)
            except grpc.RpcError as err:
                details = (err.details() or "").replace("\n", " ")
                print(f"{seq} ERR {err.code().name} {details}", flush=True)
            time.sleep(0.05)


if __name__ == "__main__":
    sys.exit(main())

"""A tiny gRPC backend: answers every unary call with its own name (raw bytes, no codegen).

Usage: backend.py NAME [PORT]  -- binds 127.0.0.1:PORT (default 0: any free port) and prints
`listening PORT` once ready.
Runs until it is terminated (SIGTERM from the harness, by pid).
"""

import signal
import sys
from concurrent import futures

import grpc


class AnswerWithName(grpc.GenericRpcHandler):
    """Handles any method: the interop client only needs to know who answered."""

    def __init__(self, name: str):
        self._reply = name.encode()

    def service(self, handler_call_details):
        # No (de)serializers: requests and responses are raw bytes, so no protobuf stubs.
        return grpc.unary_unary_rpc_method_handler(lambda _request, _context: self._reply)


def main() -> int:
    name = sys.argv[1]
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((AnswerWithName(name),))
    port = server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    print(f"listening {port}", flush=True)
    # SIGTERM ends the process; stop the server first so connections close cleanly.
    signal.signal(signal.SIGTERM, lambda *_: server.stop(grace=None))
    server.wait_for_termination()
    return 0


if __name__ == "__main__":
    sys.exit(main())

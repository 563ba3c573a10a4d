"""Asks a Client Status Discovery Service what it knows and prints it as one JSON document.

Usage: csds_query.py HOST:PORT
Runs in the interop venv (the Envoy API stubs come from xds-protos). Prints
`{"configs": [{"node": ID, "scope": SCOPE, "resources": [{"type_url", "name", "version",
"client_status", "config_status", "config_sha256"}]}]}` and exits 0, or prints the error and
exits 1.
"""

import hashlib
import json
import sys

import grpc
from envoy.admin.v3 import config_dump_shared_pb2
from envoy.service.status.v3 import csds_pb2, csds_pb2_grpc

TIMEOUT_S = 5


def resource(entry) -> dict:
    config = entry.xds_config.value if entry.HasField("xds_config") else None
    return {
        "type_url": entry.type_url,
        "name": entry.name,
        "version": entry.version_info,
        "client_status": config_dump_shared_pb2.ClientResourceStatus.Name(entry.client_status),
        "config_status": csds_pb2.ConfigStatus.Name(entry.config_status),
        "config_sha256": hashlib.sha256(config).hexdigest() if config is not None else None,
    }


def main() -> int:
    with grpc.insecure_channel(sys.argv[1]) as channel:
        stub = csds_pb2_grpc.ClientStatusDiscoveryServiceStub(channel)
        try:
            answer = stub.FetchClientStatus(csds_pb2.ClientStatusRequest(), timeout=TIMEOUT_S)
        except grpc.RpcError as err:
            print(f"CSDS at {sys.argv[1]}: {err.code().name} {err.details()}")
            return 1
    configs = [{
        "node": config.node.id,
        "scope": config.client_scope,
        "resources": [resource(e) for e in config.generic_xds_configs],
    } for config in answer.config]
    print(json.dumps({"configs": configs}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

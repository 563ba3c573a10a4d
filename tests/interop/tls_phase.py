"""The TLS phase of the interop run: gRPC's real xDS client reaches xdsloop-server over mTLS with
its bootstrap's `tls` channel credentials (gRFC A65), the server shows the client's verified
identity per stream, and a client whose certificate another CA signed is refused on both sides.

Certificates are made for the run by the `openssl` binary in the run's temp directory (EC
P-256, valid one day); nothing is committed. Standard library only.
"""

from __future__ import annotations

import json
import shutil
import ssl
import subprocess
import urllib.request
from pathlib import Path

from harness import Setup

CLIENT_SPIFFE = "spiffe://xdsloop.test/grpc-client"
CLIENT_CN = "grpc-client"
TLS_NODE = "interop-tls-client"
ROGUE_NODE = "interop-rogue-client"


def _openssl(args: list[str], cwd: Path) -> None:
    try:
        done = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True,
                              timeout=60)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise Setup(f"openssl {args[0]} failed: {err}")
    if done.returncode != 0:
        raise Setup(f"openssl {' '.join(args)} exited with {done.returncode}: {done.stderr}")


def _ca(cwd: Path, name: str, cn: str) -> None:
    _openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
              "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "1", "-subj", f"/CN={cn}",
              "-addext", "basicConstraints=critical,CA:TRUE",
              "-addext", "keyUsage=critical,keyCertSign,cRLSign"], cwd)


def _leaf(cwd: Path, name: str, ca: str, cn: str, extensions: str) -> None:
    (cwd / f"{name}.ext").write_text(extensions)
    _openssl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
              "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={cn}"], cwd)
    _openssl(["x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
              "-CAcreateserial", "-out", f"{name}.pem", "-days", "1",
              "-extfile", f"{name}.ext"], cwd)


def make_certificates(work: Path) -> Path:
    """CA, server (127.0.0.1, localhost), client (SPIFFE id), and a rogue CA with its client."""
    if shutil.which("openssl") is None:
        raise Setup("the TLS phase makes its certificates with the `openssl` binary, which is "
                    "not on PATH (Debian/Ubuntu: apt-get install openssl)")
    certs = work / "certs"
    certs.mkdir()
    _ca(certs, "ca", "xdsloop interop CA")
    _leaf(certs, "server", "ca", "xdsloop-server",
          "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
    _leaf(certs, "client", "ca", CLIENT_CN,
          f"subjectAltName=URI:{CLIENT_SPIFFE},DNS:{CLIENT_CN}.test\n"
          "extendedKeyUsage=clientAuth\n")
    _ca(certs, "rogue-ca", "some other CA")
    _leaf(certs, "rogue", "rogue-ca", "rogue",
          "subjectAltName=URI:spiffe://elsewhere/rogue\nextendedKeyUsage=clientAuth\n")
    return certs


def server_args(certs: Path) -> list[str]:
    return ["--tls-cert", str(certs / "server.pem"), "--tls-key", str(certs / "server.key"),
            "--tls-client-ca", str(certs / "ca.pem")]


def write_bootstrap(work: Path, bootstrap: dict, port: int, certs: Path, cert: str,
                    node: str) -> Path:
    """`bootstrap` pointed at the TLS server, with A65 `tls` channel credentials presenting
    `cert` (`client` or `rogue`)."""
    config = json.loads(json.dumps(bootstrap))
    server = config["xds_servers"][0]
    server["server_uri"] = f"127.0.0.1:{port}"
    server["channel_creds"] = [{"type": "tls", "config": {
        "ca_certificate_file": str(certs / "ca.pem"),
        "certificate_file": str(certs / f"{cert}.pem"),
        "private_key_file": str(certs / f"{cert}.key"),
    }}]
    config["node"]["id"] = node
    path = work / f"grpc-bootstrap-{cert}.json"
    path.write_text(json.dumps(config, indent=2))
    return path


def fetch_status(admin: str, certs: Path) -> dict | None:
    """`/status` of the mTLS server, presenting the client certificate."""
    context = ssl.create_default_context(cafile=str(certs / "ca.pem"))
    context.load_cert_chain(str(certs / "client.pem"), str(certs / "client.key"))
    try:
        with urllib.request.urlopen(f"https://{admin}/status", timeout=2,
                                    context=context) as response:
            return json.load(response)
    except (OSError, ValueError):
        return None


def identity_shown(status: dict) -> str:
    """"" when the TLS client's stream shows its verified identity."""
    streams = [s for s in status.get("streams", []) if s.get("node_id") == TLS_NODE]
    if len(streams) != 1:
        return f"expected one stream from {TLS_NODE}: {streams}"
    identity = streams[0].get("identity") or {}
    if identity.get("uri_sans") != [CLIENT_SPIFFE] or identity.get("subject_cn") != CLIENT_CN:
        return f"identity of {TLS_NODE}'s stream: {identity}"
    if (status.get("tls") or {}).get("client_auth") != "required":
        return f"tls: {status.get('tls')}"
    return ""


def rogue_refused(status: dict) -> str:
    """"" when the server recorded the rogue client's handshake as refused, and let no stream
    of it in."""
    failures = (status.get("tls") or {}).get("handshake_failures") or []
    if not any("not signed by --tls-client-ca" in f.get("reason", "") for f in failures):
        return f"handshake_failures: {failures}"
    if any(s.get("node_id") == ROGUE_NODE for s in status.get("streams", [])):
        return f"{ROGUE_NODE} has a stream"
    return ""

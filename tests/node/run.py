#!/usr/bin/env python3
"""`make node-package`: packs the npm packages (`@xdsloop/linux-x64` with this build's two
binaries, and `xdsloop`) with `npm pack`, installs both tarballs into a fresh project in a temp
directory (with @grpc/grpc-js-xds from the npm registry, pinned in package-lock.json), and runs
`node --test` there: gRPC's Node xDS client against `startXdsServer`.

Standard library only. BIN_DIR names the built binaries (the Makefile builds them first).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
NPM = REPO / "npm"
PLATFORM = "linux-x64"
BINARIES = ("xdsloop-server", "xdsloop-client")
TIMEOUT_S = 900


def run(argv: list, **kwargs) -> subprocess.CompletedProcess:
    print("+ " + " ".join(str(a) for a in argv), flush=True)
    return subprocess.run([str(a) for a in argv], check=True, timeout=TIMEOUT_S, **kwargs)


def same_versions() -> str:
    """The workspace's version, which every package.json (and the main package's pin of the
    platform package) must carry: one release, one version."""
    version = tomllib.loads((REPO / "Cargo.toml").read_text())["workspace"]["package"]["version"]
    main = json.loads((NPM / "xdsloop" / "package.json").read_text())
    platform = json.loads((NPM / "platforms" / PLATFORM / "package.json").read_text())
    found = {"npm/xdsloop": main["version"], f"npm/platforms/{PLATFORM}": platform["version"],
             f"xdsloop's optionalDependencies {platform['name']}":
                 main["optionalDependencies"].get(platform["name"])}
    wrong = {k: v for k, v in found.items() if v != version}
    if wrong:
        raise SystemExit(f"the npm packages must carry the workspace's version {version}: {wrong}")
    return version


def pack(source: Path, stage: Path, out: Path, binaries: Path | None = None) -> Path:
    """Copies a package to `stage` with the LICENSE (and the binaries), packs it into `out`."""
    shutil.rmtree(stage, ignore_errors=True)
    shutil.copytree(source, stage)
    shutil.copy2(REPO / "LICENSE", stage / "LICENSE")
    if binaries is not None:
        (stage / "bin").mkdir(exist_ok=True)
        for name in BINARIES:
            shutil.copy2(binaries / name, stage / "bin" / name)
    done = run(["npm", "pack", "--json", "--pack-destination", out], cwd=stage,
               stdout=subprocess.PIPE, text=True)
    return out / json.loads(done.stdout)[0]["filename"]


def main() -> int:
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is needed (Debian: apt-get install nodejs npm)")
    version = same_versions()
    bin_dir = Path(os.environ.get("BIN_DIR", REPO / "target" / "debug")).resolve()
    out = bin_dir.parent / "npm"
    out.mkdir(parents=True, exist_ok=True)
    platform = pack(NPM / "platforms" / PLATFORM, out / "stage" / PLATFORM, out, bin_dir)
    main_tgz = pack(NPM / "xdsloop", out / "stage" / "xdsloop", out)
    print(f"packed {platform.name} and {main_tgz.name} (version {version})", flush=True)

    work = Path(tempfile.mkdtemp(prefix="xdsloop-node-package-"))
    try:
        for name in ("package.json", "package-lock.json", "xdsloop.test.js", "greeter-client.js"):
            shutil.copy2(HERE / name, work / name)
        npm = ["npm", "--no-audit", "--no-fund", "--loglevel", "error"]
        run(npm + ["ci"], cwd=work)
        # Nothing is published: the platform tarball is installed beside the main one, and
        # satisfies the main package's optional dependency on it.
        run(npm + ["install", platform, main_tgz], cwd=work)
        done = subprocess.run(["node", "--test", "xdsloop.test.js"], cwd=work, timeout=TIMEOUT_S)
        return done.returncode
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

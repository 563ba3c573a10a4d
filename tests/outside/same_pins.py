"""Fails if tests/outside/Cargo.lock pins a crate at a version the workspace's Cargo.lock does
not: the outside crate must build what the workspace tested, not whatever resolved last.

Refresh it after a change of the workspace's pins: copy the root Cargo.lock over it, then run
`cargo metadata --format-version 1 >/dev/null` in tests/outside (cargo drops what it does not use).
"""

import pathlib
import sys
import tomllib

here = pathlib.Path(__file__).resolve().parent
root = tomllib.loads((here.parent.parent / "Cargo.lock").read_text())
outside = tomllib.loads((here / "Cargo.lock").read_text())

pinned = {(p["name"], p["version"]) for p in root["package"]}
ours = {"xdsloop-outside"}
drift = [
    f'{p["name"]} {p["version"]}'
    for p in outside["package"]
    if p["name"] not in ours and (p["name"], p["version"]) not in pinned
]
if drift:
    print("tests/outside/Cargo.lock pins what the workspace does not:", *drift, sep="\n  ")
    sys.exit(1)
print(f"tests/outside/Cargo.lock: {len(outside['package'])} packages, all pinned as in Cargo.lock")

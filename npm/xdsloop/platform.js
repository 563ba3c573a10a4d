'use strict';
// Which package carries this machine's binaries. One package per platform, each an optional
// dependency of this one with `os` and `cpu` set, so npm installs only the matching one.
// Only linux-x64 is built today; the others are where their packages would go.
const path = require('path');

const PACKAGES = {
  'linux-x64': '@xdsloop/linux-x64',
  'linux-arm64': '@xdsloop/linux-arm64',
  'darwin-x64': '@xdsloop/darwin-x64',
  'darwin-arm64': '@xdsloop/darwin-arm64',
};

/** The path of `name` (`xdsloop-server` or `xdsloop-client`) for this platform. */
function binaryPath(name) {
  const key = `${process.platform}-${process.arch}`;
  const pkg = PACKAGES[key];
  if (!pkg) {
    throw new Error(`xdsloop has no binaries for ${key} (there are: ${Object.keys(PACKAGES).join(', ')})`);
  }
  let manifest;
  try {
    manifest = require.resolve(`${pkg}/package.json`);
  } catch (err) {
    throw new Error(
      `xdsloop: ${pkg}, the package with the binaries for ${key}, is not installed. It is an ` +
      'optional dependency of xdsloop: install without --no-optional / --omit=optional, ' +
      `or install ${pkg} explicitly.`,
    );
  }
  return path.join(path.dirname(manifest), 'bin', name);
}

module.exports = { binaryPath, PACKAGES };

#!/usr/bin/env node
'use strict';
// Runs this platform's xdsloop-client with the given arguments, its exit code passed on.
const { spawnSync } = require('child_process');
const { binaryPath } = require('../platform.js');

const done = spawnSync(binaryPath('xdsloop-client'), process.argv.slice(2), { stdio: 'inherit' });
if (done.error) {
  console.error(`xdsloop-client: ${done.error.message}`);
  process.exit(1);
}
process.exit(done.status === null ? 1 : done.status);

// gRPC's Node xDS client (@grpc/grpc-js-xds), the same loop as client.py: calls TARGET every
// INTERVAL seconds (default 0.05), one line per call: `SEQ OK NAME` or `SEQ ERR CODE DETAILS`.
// The bootstrap comes from GRPC_XDS_BOOTSTRAP. INTEROP_WAIT_FOR_READY=0 and
// INTEROP_THEN_TARGET / INTEROP_THEN_WHEN work as in client.py (a second channel's lines end
// their status with ` then`).
const fs = require('fs');
const grpc = require('@grpc/grpc-js');
require('@grpc/grpc-js-xds').register();

const METHOD = '/xdsloop.interop.Greeter/Hello';
const CALL_TIMEOUT_MS = 2000;
const target = process.argv[2];
const interval = Number(process.argv[3] || 0.05) * 1000;
const wait = process.env.INTEROP_WAIT_FOR_READY !== '0';
const thenTarget = process.env.INTEROP_THEN_TARGET;
const thenWhen = process.env.INTEROP_THEN_WHEN;
const codes = Object.fromEntries(Object.entries(grpc.status).map(([k, v]) => [v, k]));

function call(client, seq, label) {
  const suffix = label ? ` ${label}` : '';
  const deadline = new Date(Date.now() + CALL_TIMEOUT_MS);
  return new Promise((resolve) => {
    client.makeUnaryRequest(METHOD, (b) => b, (b) => b, Buffer.alloc(0),
      { deadline, waitForReady: wait }, (err, reply) => {
        if (err) {
          const details = (err.details || '').replace(/\n/g, ' ');
          resolve(`${seq} ERR ${codes[err.code]}${suffix} ${details}`);
        } else {
          resolve(`${seq} OK ${reply.toString()}${suffix}`);
        }
      });
  });
}

async function main() {
  const client = new grpc.Client(target, grpc.credentials.createInsecure());
  let then = null;
  for (let seq = 1; ; seq += 1) {
    console.log(await call(client, seq, ''));
    if (then === null && thenTarget && thenWhen && fs.existsSync(thenWhen)) {
      then = new grpc.Client(thenTarget, grpc.credentials.createInsecure());
    }
    if (then !== null) {
      console.log(await call(then, seq, 'then'));
    }
    await new Promise((r) => setTimeout(r, interval));
  }
}

main();

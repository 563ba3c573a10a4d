// gRPC's Node xDS client calling TARGET every 50 ms, one line per call: `SEQ OK NAME` or
// `SEQ ERR CODE DETAILS`. The bootstrap comes from GRPC_XDS_BOOTSTRAP. A process of its own, so
// the test's process holds no xDS client that would keep it alive.
const grpc = require('@grpc/grpc-js');
require('@grpc/grpc-js-xds').register();

const METHOD = '/xdsloop.test.Greeter/Hello';
const codes = Object.fromEntries(Object.entries(grpc.status).map(([k, v]) => [v, k]));
const client = new grpc.Client(process.argv[2], grpc.credentials.createInsecure());

function call(seq) {
  const deadline = new Date(Date.now() + 2000);
  return new Promise((resolve) => {
    client.makeUnaryRequest(METHOD, (b) => b, (b) => b, Buffer.alloc(0),
      { deadline, waitForReady: true }, (err, reply) => {
        resolve(err ? `${seq} ERR ${codes[err.code]} ${(err.details || '').replace(/\n/g, ' ')}`
          : `${seq} OK ${reply.toString()}`);
      });
  });
}

(async () => {
  for (let seq = 1; ; seq += 1) {
    console.log(await call(seq));
    await new Promise((r) => setTimeout(r, 50));
  }
})();

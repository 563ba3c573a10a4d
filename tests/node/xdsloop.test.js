// The packed xdsloop package, installed from its tarballs into a fresh project, against gRPC's
// Node xDS client (@grpc/grpc-js-xds): a hot push followed, a corrupt push NACKed and a
// scenario cleared, an await's timeout, and the binaries behind the package's bins.
const test = require('node:test');
const assert = require('node:assert');
const { spawn, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');
const grpc = require('@grpc/grpc-js');
const { startXdsServer, WaitTimeout, binaryPath } = require('xdsloop');

const NODE = 'node-package-test';
const TYPE = 'type.googleapis.com/envoy.config.';
const RUN = 5;
const FIRST_CALL_MS = 30000;
const PUSH_MS = 15000;

async function backend(name) {
  const server = new grpc.Server();
  const identity = (b) => b;
  server.addService({
    Hello: {
      path: '/xdsloop.test.Greeter/Hello', requestStream: false, responseStream: false,
      requestSerialize: identity, requestDeserialize: identity,
      responseSerialize: identity, responseDeserialize: identity,
    },
  }, { Hello: (_call, callback) => callback(null, Buffer.from(name)) });
  const port = await new Promise((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(),
      (err, bound) => (err ? reject(err) : resolve(bound)));
  });
  return { server, port };
}

function endpoints(port) {
  // gRPC drops localities without a load_balancing_weight.
  return {
    '@type': `${TYPE}endpoint.v3.ClusterLoadAssignment`, cluster_name: 'greeter',
    endpoints: [{ locality: { zone: 'local' }, load_balancing_weight: 1,
      lb_endpoints: [{ endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: port } } } }] }],
  };
}

/** Listener greeter -> route -> cluster greeter (EDS over ADS) -> 127.0.0.1:port. */
function greeter(port) {
  return [
    { '@type': `${TYPE}listener.v3.Listener`, name: 'greeter',
      api_listener: { api_listener: {
        '@type': 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
        rds: { route_config_name: 'greeter-route', config_source: { ads: {}, resource_api_version: 'V3' } },
        http_filters: [{ name: 'envoy.filters.http.router',
          typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router' } }],
      } } },
    { '@type': `${TYPE}route.v3.RouteConfiguration`, name: 'greeter-route',
      virtual_hosts: [{ name: 'greeter', domains: ['*'], routes: [{ match: { prefix: '' }, route: { cluster: 'greeter' } }] }] },
    { '@type': `${TYPE}cluster.v3.Cluster`, name: 'greeter', type: 'EDS', lb_policy: 'ROUND_ROBIN',
      eds_cluster_config: { eds_config: { ads: {}, resource_api_version: 'V3' } } },
    endpoints(port),
  ];
}

/** gRPC's Node xDS client in a child process; `answers(since)` lists who answered its calls. */
function startClient(server, t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'xdsloop-node-client-'));
  const bootstrap = path.join(dir, 'bootstrap.json');
  fs.writeFileSync(bootstrap, JSON.stringify({
    xds_servers: [{ server_uri: server.address, channel_creds: [{ type: 'insecure' }], server_features: ['xds_v3'] }],
    node: { id: NODE, locality: { zone: 'local' } },
  }));
  const child = spawn(process.execPath, [path.join(__dirname, 'greeter-client.js'), 'xds:///greeter'],
    { env: { ...process.env, GRPC_XDS_BOOTSTRAP: bootstrap }, stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = [];
  readline.createInterface({ input: child.stdout }).on('line', (line) => lines.push(line));
  t.after(() => {
    child.kill('SIGTERM');
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const answers = (since = 0) => lines.slice(since).map((l) => l.split(' '))
    .filter((p) => p.length >= 3).map((p) => (p[1] === 'OK' ? p[2] : `ERR:${p[2]}`));
  return {
    mark: () => lines.length,
    answers,
    async waitRun(name, since = 0, timeoutMs = PUSH_MS) {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        const made = answers(since);
        if (made.length >= RUN && made.slice(-RUN).every((c) => c === name)) return true;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(`calls did not move to ${name}: ${JSON.stringify(answers(since).slice(-10))}`);
    },
    async waitCount(count, since, timeoutMs = PUSH_MS) {
      const deadline = Date.now() + timeoutMs;
      while (answers(since).length < count && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
      }
      return answers(since).slice(0, count);
    },
  };
}

async function setUp(t) {
  const a = await backend('A');
  const b = await backend('B');
  const server = await startXdsServer({ resources: greeter(a.port), name: 'node-test' });
  t.after(async () => {
    await server.stop();
    a.server.forceShutdown();
    b.server.forceShutdown();
  });
  const client = startClient(server, t);
  await client.waitRun('A', 0, FIRST_CALL_MS);
  return { server, client, ports: { A: a.port, B: b.port } };
}

test('grpc-js-xds follows a hot push', async (t) => {
  const { server, client, ports } = await setUp(t);
  const first = await server.awaitAck(NODE, 'eds');
  const mark = server.mark();
  const since = client.mark();
  const served = await server.setResources(greeter(ports.B));
  assert.ok(served.generation >= 2);
  const version = await server.version(NODE, 'eds');
  assert.notStrictEqual(version, first.version);
  const ack = await server.awaitAck(NODE, 'eds', { version, since: mark });
  assert.strictEqual(ack.stream, first.stream, 'one ADS stream for the whole run');
  await client.waitRun('B', since);

  const copy = await server.record(path.join(os.tmpdir(), `xdsloop-node-${process.pid}.jsonl`));
  const lines = fs.readFileSync(copy, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  fs.rmSync(copy);
  assert.strictEqual(lines[0].schema, 'xdsloop.transcript.v1');
  assert.ok(lines.some((l) => l.node === NODE && l.verdict === 'ack' && l.version === version));
});

test('a corrupt push is NACKed, and clearing the scenario resyncs', async (t) => {
  const { server, client, ports } = await setUp(t);
  await server.awaitAck(NODE, 'eds');
  const section = await server.scenario([{ id: 'corrupt-eds', match: { node: NODE, type: 'eds' },
    times: 1, do: { corrupt: { resource: 'greeter' } } }]);
  assert.deepStrictEqual(section.rules.map((r) => r.id), ['corrupt-eds']);
  const mark = server.mark();
  let since = client.mark();
  await server.setResources(greeter(ports.B));
  const nack = await server.awaitNack(NODE, 'eds', { since: mark });
  assert.ok(nack.message, 'grpc-js says why');
  assert.strictEqual(await server.fired('corrupt-eds'), 1);
  assert.deepStrictEqual(await client.waitCount(20, since), Array(20).fill('A'));

  since = client.mark();
  await server.clearScenario();
  // No fixture edit: DELETE /scenario resyncs, and grpc-js takes the good endpoints.
  await client.waitRun('B', since);
});

test('an await that times out says what the node did', async (t) => {
  const { server } = await setUp(t);
  const held = (await server.awaitAck(NODE, 'eds')).version;
  await assert.rejects(server.awaitAck(NODE, 'eds', { version: 'v-never', timeoutMs: 1000 }),
    (err) => err instanceof WaitTimeout && err.message.includes(`ack version "${held}"`));
});

test("the package's bins run this platform's binaries", () => {
  const { version } = require('xdsloop/package.json');
  for (const name of ['xdsloop-server', 'xdsloop-client']) {
    assert.ok(binaryPath(name).includes(path.join('@xdsloop', 'linux-x64', 'bin')));
    const out = execFileSync(path.join(process.cwd(), 'node_modules', '.bin', name), ['--version'],
      { encoding: 'utf8' });
    assert.match(out, new RegExp(`^${name} ${version.replace(/\./g, '\\.')}( \\(git [0-9a-f]{7,}\\))?\\n$`));
  }
});

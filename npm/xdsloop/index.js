'use strict';
// startXdsServer(): the xdsloop-server binary of this platform's package, on a free loopback
// port, serving a fixture directory or resources given as objects, with awaits for what each
// node did (read from the server's transcript) and the admin API (/status, /scenario).
// The same verbs as the Python package's XdsServer (docs/node.md, docs/python.md).

const { spawn } = require('child_process');
const fs = require('fs');
const fsp = require('fs/promises');
const os = require('os');
const path = require('path');
const readline = require('readline');
const { binaryPath } = require('./platform.js');

const START_TIMEOUT_MS = 20000;
const STOP_TIMEOUT_MS = 5000;
const DEFAULT_TIMEOUT_MS = 10000;
// The admin API is HTTP with no event to wait on, and the transcript is flushed every 100 ms.
const POLL_MS = 50;
const RESOURCES_FILE = 'resources.json';

const PREFIX = 'type.googleapis.com/';
// The short names the transcript uses (any other type is its full type URL).
const TYPE_ALIASES = {
  cds: `${PREFIX}envoy.config.cluster.v3.Cluster`,
  eds: `${PREFIX}envoy.config.endpoint.v3.ClusterLoadAssignment`,
  lds: `${PREFIX}envoy.config.listener.v3.Listener`,
  rds: `${PREFIX}envoy.config.route.v3.RouteConfiguration`,
  srds: `${PREFIX}envoy.config.route.v3.ScopedRouteConfiguration`,
  vhds: `${PREFIX}envoy.config.route.v3.VirtualHost`,
  sds: `${PREFIX}envoy.extensions.transport_sockets.tls.v3.Secret`,
  rtds: `${PREFIX}envoy.service.runtime.v3.Runtime`,
  ecds: `${PREFIX}envoy.config.core.v3.TypedExtensionConfig`,
};
const BY_URL = Object.fromEntries(Object.entries(TYPE_ALIASES).map(([a, u]) => [u, a]));

function typeName(name) {
  return name.includes('/') ? (BY_URL[name] || name) : name.toLowerCase();
}

class XdsloopError extends Error {
  constructor(message) {
    super(message);
    this.name = this.constructor.name;
  }
}
/** An await ran out of time; the message says what the node did instead. */
class WaitTimeout extends XdsloopError {}
/** The server could not start, or exited. */
class ServerFailed extends XdsloopError {}
/** The server rejected a fixture edit (file, line and column); the last good one stays served. */
class FixtureRejected extends XdsloopError {}
/** PUT /scenario refused the rules; the ones in force stay. */
class ScenarioRefused extends XdsloopError {}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function fixtureText(content) {
  if (typeof content === 'string' || content instanceof Uint8Array) return content;
  return `${JSON.stringify(content, null, 2)}\n`;
}

function rulesText(rules) {
  if (typeof rules === 'string') return rules;
  // JSON is YAML: the server reads either.
  if (Array.isArray(rules)) return JSON.stringify({ version: 1, rules });
  return JSON.stringify(rules);
}

/** The server's transcript (`--record`), read as it grows: every event since it started. */
class Journal {
  constructor(file) {
    this.file = file;
    this.events = [];
    this.offset = 0;
    this.partial = '';
    this.responses = new Map();
  }

  refresh() {
    let fd;
    try {
      fd = fs.openSync(this.file, 'r');
    } catch (err) {
      if (err.code === 'ENOENT') return;
      throw err;
    }
    try {
      const size = fs.fstatSync(fd).size;
      if (size <= this.offset) return;
      const chunk = Buffer.alloc(size - this.offset);
      fs.readSync(fd, chunk, 0, chunk.length, this.offset);
      this.offset = size;
      const lines = (this.partial + chunk.toString('utf8')).split('\n');
      // The last piece is a line still being written (or empty after a newline).
      this.partial = lines.pop();
      for (const raw of lines) {
        if (!raw.trim()) continue;
        const line = JSON.parse(raw);
        if (line.kind === 'header') continue;
        this.events.push(line);
        if (line.kind === 'response') {
          this.responses.set(`${line.stream}|${line.type}|${line.nonce}`, line);
        }
      }
    } finally {
      fs.closeSync(fd);
    }
  }

  answered(request) {
    return this.responses.get(`${request.stream}|${request.type}|${request.nonce}`);
  }

  find(node, type, verdict, since) {
    this.refresh();
    return this.events.slice(since).filter((e) => e.kind === 'request' && e.node === node
      && e.type === type && e.verdict === verdict);
  }

  findAck(node, type, version, since) {
    for (const request of this.find(node, type, 'ack', since)) {
      const response = this.answered(request);
      // SotW: the version the ACK carries; Delta: the ACKed response's system version.
      const held = request.version !== undefined ? request.version
        : ((response && response.system_version) || '');
      if (version === undefined || version === null || held === version) {
        return { node, type, version: held, nonce: request.nonce || '', stream: request.stream, at: request.t };
      }
    }
    return null;
  }

  findNack(node, type, since) {
    for (const request of this.find(node, type, 'nack', since)) {
      const response = this.answered(request);
      const detail = request.error_detail || {};
      return {
        node,
        type,
        version: response ? (response.version ?? response.system_version ?? '') : '',
        nonce: request.nonce || '',
        stream: request.stream,
        at: request.t,
        code: detail.code || 0,
        message: detail.message || '',
      };
    }
    return null;
  }

  describe(node, type, last = 8) {
    this.refresh();
    const mine = this.events.filter((e) => e.node === node && e.type === type
      && ['request', 'response', 'fault'].includes(e.kind));
    if (mine.length === 0) {
      const seen = [...new Set(this.events.map((e) => e.node).filter(Boolean))].sort();
      return `it sent no ${type} request (nodes seen: ${seen.join(', ') || 'none'})`;
    }
    return `its last ${type} messages:\n${mine.slice(-last).map((e) => `  ${describe(e)}`).join('\n')}`;
  }
}

function describe(e) {
  const head = `stream ${e.stream}: `;
  if (e.kind === 'response') {
    const count = (e.resources || []).length;
    const by = e.fault ? ` [${e.fault.action} by ${e.fault.rule}]` : '';
    const version = e.version ?? e.system_version ?? '';
    return `${head}push version ${JSON.stringify(version)} nonce ${JSON.stringify(e.nonce)} (${count} resource${count === 1 ? '' : 's'})${by}`;
  }
  if (e.kind === 'fault') return `${head}fault ${e.action} by rule ${e.rule}`;
  let text = `${head}${e.step || e.verdict || 'request'}`;
  if (e.version !== undefined) text += ` version ${JSON.stringify(e.version)}`;
  if (e.nonce) text += ` nonce ${JSON.stringify(e.nonce)}`;
  if (e.error_detail) text += `: ${e.error_detail.message || ''}`;
  return text;
}

/** A running xdsloop-server. Made by `startXdsServer`; `stop()` (or `await using`) ends it. */
class XdsServer {
  constructor(options) {
    this.options = options;
    this.name = options.name || 'xdsloop-server';
    this.address = '';
    this.adminAddress = '';
    this.workdir = '';
    this.fixtureDir = '';
    this.logPath = '';
    this.process = null;
    this.exited = null;
    this.journal = null;
  }

  get port() {
    return Number(this.address.split(':').pop());
  }

  get running() {
    return this.process !== null && this.exited === null;
  }

  async start() {
    const o = this.options;
    if (o.fixtures && (o.resources || o.nodeResources)) {
      throw new Error('serve either a fixture directory or resources, not both');
    }
    const binary = o.binary || process.env.XDSLOOP_SERVER || binaryPath('xdsloop-server');
    this.keep = Boolean(o.keep || o.workdir);
    this.workdir = o.workdir || await fsp.mkdtemp(path.join(os.tmpdir(), 'xdsloop-'));
    await fsp.mkdir(this.workdir, { recursive: true });
    if (o.fixtures) {
      this.fixtureDir = o.fixtures;
    } else {
      this.fixtureDir = path.join(this.workdir, 'fixtures');
      await fsp.mkdir(this.fixtureDir, { recursive: true });
      if (o.resources) {
        await fsp.writeFile(path.join(this.fixtureDir, RESOURCES_FILE), fixtureText(o.resources));
      }
      for (const [node, resources] of Object.entries(o.nodeResources || {})) {
        const dir = path.join(this.fixtureDir, 'nodes', node);
        await fsp.mkdir(dir, { recursive: true });
        await fsp.writeFile(path.join(dir, RESOURCES_FILE), fixtureText(resources));
      }
    }
    const transcript = path.join(this.workdir, 'transcript.jsonl');
    const argv = ['--fixtures', this.fixtureDir, '--listen', '127.0.0.1:0', '--record', transcript];
    if (o.adminListener) argv.push('--admin', '127.0.0.1:0');
    if (o.scenario !== undefined) {
      const file = path.join(this.workdir, 'scenario.yaml');
      await fsp.writeFile(file, rulesText(o.scenario));
      argv.push('--scenario', file);
    }
    argv.push(...(o.args || []));
    this.logPath = path.join(this.workdir, 'server.log');
    const log = fs.openSync(this.logPath, 'w');
    const env = { ...process.env, NO_COLOR: '1', RUST_LOG: process.env.RUST_LOG || 'info', ...(o.env || {}) };
    this.process = spawn(binary, argv, { stdio: ['ignore', 'pipe', log], env });
    fs.closeSync(log);
    this.journal = new Journal(transcript);
    const exited = new Promise((resolve) => {
      this.process.on('exit', (code, signal) => {
        this.exited = { code, signal };
        resolve();
      });
      this.process.on('error', (err) => {
        this.exited = { code: null, signal: null, error: err };
        resolve();
      });
    });
    this.exitedPromise = exited;
    // The first stdout line is `xdsloop-server listening on ADDR`, the second `admin:
    // http://ADDR/status ...` (docs/status.md): no port is guessed.
    const lines = [];
    const rl = readline.createInterface({ input: this.process.stdout });
    const addresses = new Promise((resolve) => {
      rl.on('line', (line) => {
        lines.push(line);
        if (lines.length === 2) resolve();
      });
    });
    const timer = sleep(o.startTimeoutMs || START_TIMEOUT_MS);
    await Promise.race([addresses, exited, timer]);
    const xds = lines.find((l) => l.includes(' listening on '));
    const admin = lines.find((l) => l.startsWith('admin: '));
    if (!xds || !admin) {
      const why = this.exited ? (this.exited.error ? `could not run ${binary}: ${this.exited.error.message}` : 'exited') : 'did not print its addresses';
      await this.stop();
      throw new ServerFailed(`${this.name} ${why}\n${this.logTail()}`);
    }
    this.address = xds.split(' ').pop();
    this.adminAddress = admin.split('://')[1].split('/')[0];
    return this;
  }

  /** Stops the server (SIGTERM, then SIGKILL after 5 s); the work directory goes unless kept. */
  async stop() {
    if (this.process && !this.exited) {
      this.process.kill('SIGTERM');
      const done = await Promise.race([this.exitedPromise.then(() => true), sleep(STOP_TIMEOUT_MS)]);
      if (!done) {
        this.process.kill('SIGKILL');
        await this.exitedPromise;
      }
    }
    if (this.workdir && !this.keep) {
      await fsp.rm(this.workdir, { recursive: true, force: true });
    }
    return this.exited ? this.exited.code : null;
  }

  async [Symbol.asyncDispose]() {
    await this.stop();
  }

  /** The server's log (stderr) so far. */
  log() {
    try {
      return fs.readFileSync(this.logPath, 'utf8');
    } catch {
      return '';
    }
  }

  /** The log's last lines, headed by the server's name and state. */
  logTail(lines = 60) {
    const state = this.running ? 'running' : `exited with ${this.exited && this.exited.code}`;
    const body = this.log().split('\n').slice(-lines).join('\n');
    return `--- ${this.name} (pid ${this.process && this.process.pid}, ${state}), ${this.logPath} ---\n${body}`;
  }

  async request(method, route, body) {
    const response = await fetch(`http://${this.adminAddress}${route}`, { method, body });
    const text = await response.text();
    if (!response.ok) {
      const err = new Error(`${method} ${route}: HTTP ${response.status}: ${text}`);
      err.status = response.status;
      err.body = text;
      throw err;
    }
    return text.trim() ? JSON.parse(text) : null;
  }

  /** The /status document (docs/status.md), or only `node`'s streams. */
  status(node) {
    return this.request('GET', `/status${node ? `?node=${encodeURIComponent(node)}` : ''}`);
  }

  /** The version of `type` (`cds` or a type URL) served to `node` now. */
  async version(node, type) {
    const wanted = typeName(type);
    const snapshot = (await this.status()).snapshot;
    const overlay = (snapshot.overlays || []).find((o) => o.node_id === node);
    for (const types of [(overlay || {}).types || [], snapshot.types || []]) {
      const row = types.find((t) => t.type === wanted || t.type_url === wanted);
      if (row) return row.version;
    }
    return null;
  }

  /** Writes a fixture file (objects as JSON) by a rename and resolves once it is served. */
  async writeFixture(file, content, { timeoutMs = DEFAULT_TIMEOUT_MS } = {}) {
    const target = path.join(this.fixtureDir, file);
    const data = Buffer.from(fixtureText(content));
    try {
      if (data.equals(await fsp.readFile(target))) return (await this.status()).snapshot;
    } catch { /* a new file */ }
    const before = await this.status();
    const generation = before.snapshot.generation;
    const reloads = before.reload.count || 0;
    await fsp.mkdir(path.dirname(target), { recursive: true });
    const temp = path.join(path.dirname(target), `.${path.basename(target)}.xdsloop-tmp`);
    await fsp.writeFile(temp, data);
    await fsp.rename(temp, target);
    let seen = 'no reload yet';
    return this.poll(async () => {
      const doc = await this.status();
      if (doc.snapshot.generation > generation) return doc.snapshot;
      const r = doc.reload;
      if ((r.count || 0) > reloads && r.ok === false && !r.in_progress
          && String(r.error).includes(path.basename(target))) {
        throw new FixtureRejected(`${this.name} rejected the edit of ${target}: ${r.error}`);
      }
      seen = `reload ${JSON.stringify(r)}`;
      return null;
    }, timeoutMs, `the edit of ${target} to be served`, () => seen);
  }

  /** Replaces the resources every node gets (or `node`'s overlay); resolves once served. */
  setResources(resources, { node, timeoutMs } = {}) {
    const file = node ? path.join('nodes', node, RESOURCES_FILE) : RESOURCES_FILE;
    return this.writeFixture(file, resources, { timeoutMs });
  }

  /** Puts fault rules in force (PUT /scenario): YAML text, a scenario object or a rule list. */
  async scenario(rules) {
    try {
      return await this.request('PUT', '/scenario', rulesText(rules));
    } catch (err) {
      if (err.status === 400) {
        let message = err.body;
        try { message = JSON.parse(err.body).error; } catch { /* the text itself */ }
        throw new ScenarioRefused(message);
      }
      throw err;
    }
  }

  /** Removes the rules (DELETE /scenario) and resyncs every stream. */
  async clearScenario() {
    await this.request('DELETE', '/scenario');
  }

  /** Resyncs every stream, the rules kept (POST /resync). */
  async resync() {
    await this.request('POST', '/resync');
  }

  /** How often the rule with that id fired (null: no such rule in force). */
  async fired(rule) {
    const rules = ((await this.status()).scenario || {}).rules || [];
    const found = rules.find((r) => r.id === rule);
    return found ? (found.fired || 0) : null;
  }

  /** A point in the server's history: pass it as `since` to count only what follows. */
  mark() {
    this.journal.refresh();
    return this.journal.events.length;
  }

  /** Resolves once `node` ACKed `type` (at `version`, or any), since the start or `since`. */
  awaitAck(node, type, { version, timeoutMs = DEFAULT_TIMEOUT_MS, since = 0 } = {}) {
    const name = typeName(type);
    const at = version !== undefined && version !== null ? ` at version ${JSON.stringify(version)}` : '';
    return this.poll(() => this.journal.findAck(node, name, version, since), timeoutMs,
      `node ${JSON.stringify(node)} to ACK ${name}${at}`,
      () => `instead, ${this.journal.describe(node, name)}`);
  }

  /** Resolves once `node` NACKed `type`: the rejected version and the client's error_detail. */
  awaitNack(node, type, { timeoutMs = DEFAULT_TIMEOUT_MS, since = 0 } = {}) {
    const name = typeName(type);
    return this.poll(() => this.journal.findNack(node, name, since), timeoutMs,
      `node ${JSON.stringify(node)} to NACK ${name}`,
      () => `instead, ${this.journal.describe(node, name)}`);
  }

  /** Every request `node` sent, on all its streams, oldest first (transcript lines). */
  requests(node) {
    this.journal.refresh();
    return this.journal.events.filter((e) => e.kind === 'request' && e.node === node);
  }

  /** Writes the transcript of every stream so far to `file`, once flushed; resolves to it. */
  async record(file, { timeoutMs = DEFAULT_TIMEOUT_MS } = {}) {
    const source = path.join(this.workdir, 'transcript.jsonl');
    const data = await this.poll(async () => {
      const recorder = (await this.status()).recorder || {};
      let text;
      try {
        text = await fsp.readFile(source);
      } catch {
        return null;
      }
      const complete = text.subarray(0, text.lastIndexOf(10) + 1);
      let lines = 0;
      for (const byte of complete) if (byte === 10) lines += 1;
      // The header line, then one line per event the recorder counted.
      return lines >= (recorder.lines || 0) + 1 ? complete : null;
    }, timeoutMs, `${source} to be flushed`, () => 'not all lines written yet');
    await fsp.writeFile(file, data);
    return file;
  }

  async poll(probe, timeoutMs, what, seen) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = await probe();
      if (found) return found;
      if (!this.running) {
        throw new ServerFailed(`${this.name} exited while waiting for ${what}\n${this.logTail()}`);
      }
      if (Date.now() >= deadline) {
        throw new WaitTimeout(`${what}: not within ${timeoutMs / 1000} s; ${seen()}`);
      }
      await sleep(POLL_MS);
    }
  }
}

/**
 * Starts xdsloop-server on a free loopback port, serving `fixtures` (a directory) or
 * `resources` (objects with "@type"), and resolves once it listens.
 */
async function startXdsServer(options = {}) {
  const server = new XdsServer(options);
  return server.start();
}

module.exports = {
  startXdsServer,
  XdsServer,
  binaryPath,
  XdsloopError,
  WaitTimeout,
  ServerFailed,
  FixtureRejected,
  ScenarioRefused,
  TYPE_ALIASES,
};

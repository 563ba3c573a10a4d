// Types of the xdsloop package (docs/node.md). Hand-written: index.js is plain JavaScript.

/** A resource in the proto3 JSON mapping with its "@type", as a fixture file holds it. */
export type Resource = { '@type': string; [field: string]: unknown };

/** Fault rules (docs/scenarios.md): YAML text, a scenario object, or a list of rules. */
export type Rules = string | { version: number; rules: object[] } | object[];

export interface StartOptions {
  /** A fixture directory to serve, watched and hot-reloaded. */
  fixtures?: string;
  /** Resources to serve instead, written as JSON to a fixture directory of the server's own. */
  resources?: Resource[];
  /** Per-node overlays: `{ n1: [...] }`, served to node n1 over the base set. */
  nodeResources?: Record<string, Resource[]>;
  /** The xdsloop-server binary (default: $XDSLOOP_SERVER, else this platform's package). */
  binary?: string;
  /** More command-line flags (`['--debounce', '50ms']`, TLS flags, ...). */
  args?: string[];
  /** Serve the admin routes on a listener of their own (`--admin 127.0.0.1:0`). */
  adminListener?: boolean;
  /** Fault rules in force from the start (`--scenario`). */
  scenario?: Rules;
  /** Where the log, the transcript and (for `resources`) the fixtures go; kept after stop. */
  workdir?: string;
  /** Keep the temporary work directory after stop. */
  keep?: boolean;
  /** Environment variables for the server (RUST_LOG defaults to info). */
  env?: Record<string, string>;
  /** The name in messages (`primary`, `secondary`, ...). */
  name?: string;
  startTimeoutMs?: number;
}

/** A node accepted a response: the version it now holds. */
export interface Ack {
  node: string;
  type: string;
  version: string;
  nonce: string;
  stream: number;
  at: string;
}

/** A node rejected a response: the rejected version and nonce, and its error_detail. */
export interface Nack extends Ack {
  code: number;
  message: string;
}

/** One line of the server's transcript (docs/transcripts.md, schema xdsloop.transcript.v1). */
export interface TranscriptEvent {
  t: string;
  stream: number;
  seq: number;
  node?: string;
  kind: 'open' | 'request' | 'response' | 'fault' | 'violation' | 'close' | 'gap';
  [field: string]: unknown;
}

/** The `snapshot` section of /status: what is served (generation, types and versions). */
export interface SnapshotSection {
  generation: number;
  resources: number;
  types: { type_url: string; type: string; version: string; resources: number }[];
  overlays: { node_id: string; types: SnapshotSection['types'] }[];
}

/** The /status document (docs/status.md, schema xdsloop.status.v1). */
export interface StatusDocument {
  schema: 'xdsloop.status.v1';
  snapshot: SnapshotSection;
  reload: { ok: boolean; generation: number; count: number; error: string | null; [field: string]: unknown };
  streams: Array<{ id: number; node_id: string | null; transport: string; types: Array<{ type: string; state: string; [field: string]: unknown }>; [field: string]: unknown }>;
  scenario: { rules: Array<{ id: string; action: string; fired: number; [field: string]: unknown }>; [field: string]: unknown } | null;
  [field: string]: unknown;
}

export interface WaitOptions {
  timeoutMs?: number;
  /** Count only what happened after this `mark()`. */
  since?: number;
}

export declare class XdsServer {
  /** The xDS address, `127.0.0.1:PORT`. */
  readonly address: string;
  /** Where the admin routes are (the xDS address unless `adminListener`). */
  readonly adminAddress: string;
  readonly port: number;
  readonly name: string;
  readonly workdir: string;
  readonly fixtureDir: string;
  /** The server's stderr: every push, ACK, NACK, reload and rejected edit. */
  readonly logPath: string;
  readonly running: boolean;
  /** SIGTERM, then SIGKILL after 5 s; resolves to the exit code. */
  stop(): Promise<number | null>;
  log(): string;
  logTail(lines?: number): string;
  status(node?: string): Promise<StatusDocument>;
  /** The version of `type` (`cds` or a type URL) served to `node` now. */
  version(node: string, type: string): Promise<string | null>;
  /** Writes a fixture file (objects as JSON) and resolves once the edit is served; a rejected edit rejects with FixtureRejected. */
  writeFixture(file: string, content: string | Uint8Array | object, options?: { timeoutMs?: number }): Promise<SnapshotSection>;
  setResources(resources: Resource[], options?: { node?: string; timeoutMs?: number }): Promise<SnapshotSection>;
  /** Puts fault rules in force (PUT /scenario); resolves to the scenario section of /status. */
  scenario(rules: Rules): Promise<StatusDocument['scenario']>;
  clearScenario(): Promise<void>;
  resync(): Promise<void>;
  fired(rule: string): Promise<number | null>;
  mark(): number;
  awaitAck(node: string, type: string, options?: WaitOptions & { version?: string }): Promise<Ack>;
  awaitNack(node: string, type: string, options?: WaitOptions): Promise<Nack>;
  requests(node: string): TranscriptEvent[];
  /** Writes the transcript of every stream so far to `file`; resolves to it. */
  record(file: string, options?: { timeoutMs?: number }): Promise<string>;
}

/** Starts xdsloop-server on a free loopback port; resolves once it listens. */
export declare function startXdsServer(options?: StartOptions): Promise<XdsServer>;

/** The path of this platform's `xdsloop-server` or `xdsloop-client`. */
export declare function binaryPath(name: 'xdsloop-server' | 'xdsloop-client'): string;

export declare class XdsloopError extends Error {}
export declare class WaitTimeout extends XdsloopError {}
export declare class ServerFailed extends XdsloopError {}
export declare class FixtureRejected extends XdsloopError {}
export declare class ScenarioRefused extends XdsloopError {}

export declare const TYPE_ALIASES: Record<string, string>;

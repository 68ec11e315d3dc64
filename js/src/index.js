// mcpbox for JavaScript: the mcpbox guest component, run by Node.js.
//
// The same guest `.wasm` the wasmtime host embeds, transpiled by jco (`npm run
// build`), with this package as its host. The guest holds every piece of MCP logic
// (JSON-RPC, the client, the multi-server manager and the tool registry) and has no
// ambient authority; this host owns the server processes, the policy and the
// environment.
//
//   const box = await McpBox.open({ configFile: '.mcp.json' });
//   await box.ready();
//   const result = await box.callTool('mcp__demo__echo', { text: 'hi' });
//   await box.shutdown();
//
// # Layout
//
// - index.js (this file): the API. It runs on the caller's thread and never blocks.
// - driver.js: the guest and the loop that runs it, on either thread: driver_main.js
//   runs it in turns from this thread's event loop (the default), driver_worker.js on a
//   worker thread of its own (`thread: 'worker'`); hub.js: what travels between the
//   driver and this thread.
// - imports/: the guest's imports, a file per WIT interface (imports/index.js).
// - channel.js: how a worker driver and this thread talk (a MessagePort and a shared
//   doorbell).
// - transport.js, stdio.js: server processes, on this thread's event loop.
// - remote.js, wasi_http.js: grants and the HTTP requests the guest sends under them,
//   on this thread too; http_imports.js: their proxies on the driver's side.
// - endpoint.js: `${VAR}` resolution and the child's environment allowlist.
// - framing.js: newline-delimited JSON with a size cap.
// - state.js: the `state` import's store, `state.json` in the cache directory.
// - blobs.js: the `blobs` import: oversized results and media written to files.
// - audit.js: the audit trail's file.
// - limits.js: the guest's memory limit, written into its module.

import { EventEmitter } from 'node:events';
import { watch as watchDirectory } from 'node:fs';
import { open as openFile, readFile, readdir, realpath } from 'node:fs/promises';
import { basename, dirname, resolve as resolvePath } from 'node:path';
import { MessageChannel, Worker, receiveMessageOnPort } from 'node:worker_threads';

import { DEFAULT_MAX_RESULT_FILES_BYTES, defaultResultsDir } from './blobs.js';
import { Doorbell } from './channel.js';
import { DEFAULT_BUSY_POLL_US, startDriver } from './driver_main.js';
import { DEFAULT_MEMORY_LIMIT, capMemory } from './limits.js';
import { Grants } from './remote.js';
import { defaultCacheDir } from './state.js';
import { ConnectionTable } from './transport.js';
import { HttpExchanges } from './wasi_http.js';

/** Where `npm run build` puts the transpiled guest. */
const GEN_DIR = new URL('../gen/', import.meta.url);
const GLUE = 'mcpbox_guest.js';

/**
 * The largest configuration accepted, as the guest's own cap and the wasmtime host's
 * `MAX_CONFIG_BYTES`: a bigger file is not read past it, and bigger text never enters the guest.
 */
export const MAX_CONFIG_BYTES = 16 * 1024 * 1024;

/**
 * Reads a configuration file, at most one byte past the cap; `missing` ('' unless
 * given: an empty configuration) when it does not exist.
 * @param {string} path
 * @param {string | null} [missing]
 */
async function readConfig(path, missing = '') {
  let handle;
  try {
    handle = await openFile(path, 'r');
  } catch (error) {
    if (error.code === 'ENOENT') return missing;
    throw new ConfigError(path, `${path}: cannot be read: ${error.message}`);
  }
  try {
    const chunks = [];
    let length = 0;
    for (;;) {
      const chunk = Buffer.alloc(64 * 1024);
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      chunks.push(chunk.subarray(0, bytesRead));
      length += bytesRead;
      if (length > MAX_CONFIG_BYTES) throw tooLarge(path);
    }
    return Buffer.concat(chunks, length).toString('utf8');
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ConfigError(path, `${path}: cannot be read: ${error.message}`);
  } finally {
    await handle.close();
  }
}

/**
 * The directory of the configuration file `file`, through its symlinks (as the
 * wasmtime host's trust names a file); a missing file (an empty configuration)
 * names the directory it would be in.
 * @param {string} file
 */
async function configDir(file) {
  try {
    return dirname(await realpath(file));
  } catch {
    return dirname(resolvePath(file));
  }
}

/** @param {string} origin */
function tooLarge(origin) {
  return new ConfigError(
    origin,
    `${origin} is larger than 16 MiB, the most a configuration may be; is this the right file?`,
  );
}

/** The default cap on one message from a server, as in the wasmtime host. */
const DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

/**
 * Why a call produced no tool result. `kind` is the WIT `call-error` case
 * (`unknown-tool`, `invalid-arguments`, `server-unavailable`, `timeout`, `cancelled`,
 * `protocol`) or `runtime` when the guest that ran the call trapped ("the guest failed
 * and was restarted: …") or the runtime stopped (shut down, or the guest kept trapping).
 */
export class CallError extends Error {
  /**
   * @param {string} kind
   * @param {string} message
   */
  constructor(kind, message) {
    super(message);
    this.name = 'CallError';
    this.kind = kind;
  }
}

/** The configuration as a whole is unusable (unreadable file, not JSON). */
export class ConfigError extends Error {
  /**
   * @param {string} origin the file or source the configuration came from
   * @param {string} message what is wrong, naming the origin (and line and column)
   */
  constructor(origin, message) {
    super(message);
    this.name = 'ConfigError';
    this.kind = 'config';
    this.origin = origin;
  }
}

/**
 * The compiled core modules of the transpiled guest, by memory limit: compiled once per
 * process and limit (the limit is part of the module, see limits.js).
 *
 * @type {Map<number, Promise<Record<string, WebAssembly.Module>>>}
 */
const compiled = new Map();

async function compileGuest(memoryLimit) {
  let names;
  try {
    names = (await readdir(GEN_DIR)).filter((n) => n.endsWith('.wasm'));
  } catch {
    names = [];
  }
  if (names.length === 0) {
    throw new Error(`the transpiled guest is missing from ${GEN_DIR.pathname}: run \`npm run build\` in js/`);
  }
  const modules = {};
  for (const name of names) {
    const bytes = capMemory(await readFile(new URL(name, GEN_DIR)), memoryLimit, name);
    modules[name] = await WebAssembly.compile(bytes);
  }
  return modules;
}

/** A WIT `call-error` as a `CallError`, with the wasmtime host's wording. */
function callError(variant) {
  switch (variant.tag) {
    case 'unknown-tool':
      return new CallError(variant.tag, `unknown tool: ${variant.val}`);
    case 'cancelled':
      return new CallError(variant.tag, 'the call was cancelled');
    default:
      return new CallError(variant.tag, variant.val);
  }
}

/** JSON text from the guest; the guest only passes on JSON it parsed. */
function parseJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** A WIT `server-status` in the shape `mcpbox servers --json` prints. */
function serverStatus(s) {
  return {
    name: s.name,
    state: s.state,
    transport: s.transport,
    error: s.error ?? null,
    toolCount: s.toolCount,
    protocolVersion: s.protocolVersion ?? null,
    serverName: s.serverName ?? null,
    serverVersion: s.serverVersion ?? null,
  };
}

/** A WIT `tool-info` in the shape `mcpbox tools --json` prints. */
function toolInfo(t) {
  const tool = { name: t.name, server: t.server, tool: t.tool };
  if (t.title !== undefined) {
    tool.title = t.title;
  }
  tool.description = t.description ?? null;
  tool.inputSchema = parseJson(t.inputSchema);
  if (t.outputSchema !== undefined) {
    tool.outputSchema = parseJson(t.outputSchema);
  }
  if (t.annotations !== undefined) {
    tool.annotations = parseJson(t.annotations);
  }
  return tool;
}

/** A registry in a dialect (`registry.adapted-tools`, every page) in the shape `mcpbox tools --format --json` prints. */
function adaptedTools(r) {
  return {
    dialect: r.dialect,
    tools: r.tools.map((t) => {
      const tool = { name: t.name, registryName: t.registryName, definition: parseJson(t.definition) };
      if (t.responsesDefinition !== undefined) {
        tool.responsesDefinition = parseJson(t.responsesDefinition);
      }
      tool.adapterNotes = t.notes.map((n) => ({ kind: n.kind, pointer: n.pointer, lost: n.lost }));
      return tool;
    }),
    refused: r.refused.map((x) => ({ name: x.name, pointer: x.pointer, reason: x.reason })),
  };
}

/**
 * A WIT `call-result` in the shape `mcpbox call --json` prints; a `CallError` (`protocol`)
 * when the server's JSON holds a number a JavaScript number cannot (`1e999` parses as
 * Infinity, which would reach the caller's `JSON.stringify` as `null`): the call ran, but
 * its result cannot be handed over exactly, and saying so beats a silently changed value.
 * Depth is no problem: `JSON.parse` is not recursive, and neither is the check (a reviver
 * would be, and overflows the stack at 10,000 levels).
 */
function callResult(r, tool) {
  let result;
  try {
    result = {
      isError: r.isError,
      text: r.text,
      content: JSON.parse(r.content),
      structuredContent: r.structuredContent === undefined ? null : JSON.parse(r.structuredContent),
    };
  } catch (error) {
    // The guest passes on only JSON it read: this is a guest bug, said rather than hidden.
    return new CallError('protocol', `${tool}: the result is not valid JSON: ${error.message}`);
  }
  const fields = ['content', 'structuredContent'].filter((field) => holdsInfinity(r[field], result[field]));
  if (fields.length > 0) {
    return new CallError(
      'protocol',
      `${tool}: the call ran, but its result's ${fields.join(' and ')} holds a number beyond what a ` +
        'JavaScript number can hold (like 1e999), so it cannot be handed over exactly ' +
        '(the wasmtime host passes such results through as text)',
    );
  }
  return result;
}

/**
 * Whether `value`, parsed from `text`, holds a number that overflowed to ±Infinity. Only
 * text with a long exponent or a long run of digits can, so most results skip the walk.
 */
function holdsInfinity(text, value) {
  if (text === undefined || !/[eE][+]?0*\d{3}|\d{309}/.test(text)) {
    return false;
  }
  const stack = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) return true;
    } else if (v !== null && typeof v === 'object') {
      for (const key in v) stack.push(v[key]);
    }
  }
  return false;
}

/** A WIT `config-issue` with absent fields as `null`. */
function configIssue(i) {
  return { server: i.server ?? null, field: i.field ?? null, message: i.message };
}

/** A WIT `reload-report` in the shape the wasmtime host's `ReloadReport` serialises to. */
function reloadReport(origin, r, fileEvents) {
  return {
    origin,
    added: r.added,
    removed: r.removed,
    restarted: r.restarted,
    updated: r.updated,
    unchanged: r.unchanged,
    kept: r.kept,
    issues: r.issues.map(configIssue),
    fileEvents,
  };
}

/** How long a watched file must be quiet before a change is applied, as in the Rust host. */
const DEFAULT_WATCH_DEBOUNCE_MS = 200;

/** An immutable list of converted records, as `servers()` and `tools()` hand out. */
function snapshot(list, convert) {
  return Object.freeze(list.map((item) => Object.freeze(convert(item))));
}

/** A WIT `event` as `{ type, … }`. */
function event(e) {
  switch (e.tag) {
    case 'status':
      return { type: 'status', status: serverStatus(e.val) };
    case 'tools-changed':
      return { type: 'tools-changed', server: e.val };
    case 'warning':
      return { type: 'warning', message: e.val };
    case 'log':
      return { type: 'log', server: e.val.server, level: e.val.level, message: e.val.message };
    case 'input-requested':
      return {
        type: 'input-requested',
        id: Number(e.val.id),
        server: e.val.server,
        tool: e.val.tool ?? null,
        message: e.val.message,
        requestedSchema: parseJson(e.val.requestedSchema),
        approval:
          e.val.approval === undefined
            ? null
            : { rule: e.val.approval.rule, arguments: parseJson(e.val.approval.arguments) },
      };
    case 'input-withdrawn':
      return { type: 'input-withdrawn', id: Number(e.val) };
    case 'sampling-requested':
      return {
        type: 'sampling-requested',
        id: Number(e.val.id),
        server: e.val.server,
        tool: e.val.tool ?? null,
        params: parseJson(e.val.params),
      };
    case 'audit':
      // Already the audit file's line (driver.js stamps and writes it).
      return { type: 'audit', record: e.val };
    case 'resource-updated':
      return { type: 'resource-updated', server: e.val.server, uri: e.val.uri };
    case 'resources-changed':
      return { type: 'resources-changed', server: e.val };
    case 'prompts-changed':
      return { type: 'prompts-changed', server: e.val };
    case 'task-status':
      return {
        type: 'task-status',
        server: e.val.server,
        tool: e.val.tool,
        taskId: e.val.taskId,
        status: e.val.status,
        message: e.val.message ?? null,
      };
    case 'tool-changed':
      return {
        type: 'tool-changed',
        server: e.val.server,
        tool: e.val.tool,
        name: e.val.name,
        changed: e.val.changed,
        policy: e.val.policy,
        reason: e.val.reason,
      };
    case 'url-elicitation-requested':
      return {
        type: 'url-elicitation-requested',
        id: Number(e.val.id),
        server: e.val.server,
        tool: e.val.tool ?? null,
        message: e.val.message,
        url: e.val.url,
        elicitationId: e.val.elicitationId,
      };
    default:
      return { type: e.tag, value: e.val };
  }
}

/**
 * A running mcpbox: the guest component (on this thread by default, or on a worker thread
 * of its own with `thread: 'worker'`), its servers and its tool registry. Every method is
 * safe to call at any time; `servers()` and `tools()` are snapshots that never wait.
 * Emits `'event'` with `{ type: 'status', status }`, `{ type: 'tools-changed', server }`,
 * `{ type: 'warning', message }`, `{ type: 'log', server, level, message }` and, with
 * `inputRequests: true` (or, for approvals of `ask` permission rules, `approvals: true`),
 * `{ type: 'input-requested', id, server, tool, message, requestedSchema, approval }` (MCP
 * elicitation: `elicitation/create`, and `input_required` results in 2026-07-28; answer
 * with `answerInput`) and `{ type: 'input-withdrawn', id }`; with `sampling: true`,
 * `{ type: 'sampling-requested', id, server, tool, params }` (MCP sampling,
 * `sampling/createMessage`: `params` as the server sent them; answer with `answerInput`,
 * `content` a `CreateMessageResult`); after a configuration
 * reload (`reload`, `reloadText` or the `watchConfig` watcher) `{ type: 'reloaded',
 * report }`, or `{ type: 'reload-failed', origin, error }` when the new configuration
 * was not applied (the running one stays); and with an audit file or
 * `auditEvents: true`, `{ type: 'audit', record }` for every call (a line of the audit
 * trail: `time`, `call`, `server`, `tool`, `profile`, `decision`, `rule`, `approval`,
 * `outcome`, `durationMs`, `arguments`; see docs/configuration.md, "The audit trail"); and
 * `{ type: 'resource-updated', server, uri }` for a resource followed with
 * `subscribeResource`, `{ type: 'resources-changed', server }` and
 * `{ type: 'prompts-changed', server }` when a server's resource or prompt list changed;
 * `{ type: 'task-status', server, tool, taskId, status, message }` when a call its server
 * runs as a task (MCP 2025-11-25 tasks: a tool whose `execution.taskSupport` is
 * `required`, or `optional` with `callTool`'s `task: true`) changes status; with `urlElicitation: true`,
 * `{ type: 'url-elicitation-requested', id, server, tool, message, url, elicitationId }`
 * (MCP URL-mode elicitation: show the URL, which mcpbox never opens, and answer with
 * `answerInput(id, { action: 'accept' })` once the user agreed to open it, or
 * `{ action: 'decline' }`); and `{ type: 'tool-changed', server, tool, name, changed, policy,
 * reason }` when a tool no longer matches the definition pinned when it was first seen (its
 * server's `onToolChange` decides what happens; this host keeps pins for the instance's life).
 *
 * The servers keep the process alive until `shutdown()`.
 */
/**
 * Roots as the guest's `set-roots` takes them: `{ uri, name }` records. A string is a
 * root without a name. Whether each is an absolute path or a `file://` URI is the
 * guest's to check (the same rule for every host).
 */
function rootsOf(roots) {
  if (!Array.isArray(roots)) {
    throw new TypeError('roots must be a list of absolute paths or file:// URIs (or { uri, name } objects)');
  }
  return roots.map((root, i) => {
    if (typeof root === 'string') return { uri: root, name: undefined };
    if (root !== null && typeof root === 'object' && typeof root.uri === 'string') {
      if (root.name !== undefined && root.name !== null && typeof root.name !== 'string') {
        throw new TypeError(`roots[${i}].name must be a string`);
      }
      return { uri: root.uri, name: root.name ?? undefined };
    }
    throw new TypeError(`roots[${i}] must be a path, a file:// URI or { uri, name }`);
  });
}

export class McpBox extends EventEmitter {
  /**
   * Opens a runtime and starts connecting every enabled server. Resolves as soon as
   * the servers are starting; see `ready()`.
   *
   * @param {object} options
   * @param {string} [options.configText] the configuration (`.mcp.json` format)
   * @param {string} [options.origin] names `configText` in messages (default `config`)
   * @param {string} [options.configFile] read the configuration from this file
   *   instead; a missing file is an empty configuration
   * @param {boolean} [options.allowProcesses] whether stdio servers may be started
   *   (default true)
   * @param {boolean} [options.allowNetwork] whether remote servers (`http`, `sse`) may
   *   be contacted (default true)
   * @param {number} [options.maxMessageBytes] the largest message accepted from a
   *   server (default 64 MiB)
   * @param {boolean} [options.approvals] let `ask` permission rules be asked (default false;
   *   `inputRequests` implies it): a call such a rule covers waits, its timeout running, for an
   *   `input-requested` event whose `approval` is `{ rule, arguments }`, answered with
   *   `answerInput(id, { action: 'accept', content: { approve: 'once' | 'session' } })` or
   *   `{ action: 'decline' }`; without it, such a call fails at once with a `denied` error
   * @param {boolean} [options.sampling] let servers ask for messages from the embedder's
   *   model during a call: MCP sampling (`sampling/createMessage`, tools in sampling
   *   included); default false. Each request is a `sampling-requested` event to answer
   *   with `answerInput`; without it servers are refused, naming this option
   * @param {boolean} [options.urlElicitation] let servers ask the user to open a URL
   *   during a call: MCP URL-mode elicitation; default false. Each request is a
   *   `url-elicitation-requested` event to answer with `answerInput`; mcpbox never opens
   *   the URL. Without it such requests are refused
   * @param {Array<string | {uri: string, name?: string}>} [options.roots] the directories
   *   servers may work in (MCP roots), instead of the configuration's top-level `roots`:
   *   absolute paths or `file://` URIs (see `setRoots`)
   * @param {boolean} [options.inputRequests] let servers ask the user for input during a
   *   call: MCP elicitation (`elicitation/create`, and `input_required` results in
   *   2026-07-28), form mode; default false. Each request is an
   *   `input-requested` event to answer with `answerInput`, and the call waits for it
   *   (its timeout still running)
   * @param {number} [options.memoryLimit] the most linear memory the guest may use, in
   *   bytes (default 256 MiB, as the wasmtime host's `Options::memory_limit`). A guest
   *   that needs more traps, and is replaced like any trapped guest
   * @param {string | null} [options.resultsDir] where oversized tool results and the
   *   images and audio in results are written (docs/configuration.md, "Output limits"); `null` keeps no
   *   files (results are then cut, media passed on inline). Default: a directory of its
   *   own per runtime, `results/<unix seconds>-<pid>` in the cache directory
   * @param {number} [options.maxResultBytes] results larger than this are written to a
   *   file and passed on as their head, a note and a link (overrides the configuration's
   *   `output.maxBytes`; default 100,000)
   * @param {boolean} [options.inlineMedia] keep images and audio in results inline
   *   (base64) instead of writing them to files (overrides `output.media`)
   * @param {number} [options.maxResultFilesBytes] all of this runtime's result files
   *   together at most this many bytes (default 1 GiB); later writes are refused
   * @param {string} [options.auditFile] append the audit trail (one JSON line per call)
   *   to this file, instead of the configuration's `audit.file`; one that cannot be
   *   opened rejects `open` with a `ConfigError` naming it
   * @param {boolean} [options.auditEvents] emit `audit` events even without an audit
   *   file (with one they are emitted anyway)
   * @param {boolean} [options.auditArguments] record call arguments in the audit trail
   *   (overrides the configuration's `audit.arguments`; default off)
   * @param {boolean} [options.claudeSettings] also apply the MCP permission rules of the
   *   Claude Code settings next to the configuration file (`.claude/settings.json`,
   *   `.claude/settings.local.json`); rules about Claude Code's own tools are skipped
   * @param {string | null} [options.cacheDir] where `state.json` (what the guest learns
   *   about servers) is kept, shared with the wasmtime host; `null` keeps it in memory.
   *   Default: `$MCPBOX_CACHE_DIR`, else `$XDG_CACHE_HOME/mcpbox`, else `~/.cache/mcpbox`
   * @param {boolean} [options.watchConfig] watch `configFile` and apply every change as
   *   `reload()` does (default false): its directory is watched, so saves that write a
   *   new file and rename it are seen; a change is applied once the file has been quiet
   *   for `watchDebounceMs`, so a burst of saves is applied once
   * @param {number} [options.watchDebounceMs] that quiet time (default 200)
   * @param {import('./wasi_http.js').TokenProvider} [options.tokenProvider] OAuth for
   *   remote servers, from the embedder's own flow and store: called before each request
   *   to a remote server (whose entry sets no `Authorization` header) with
   *   `{ server, url, refresh: false, wwwAuthenticate: null }`, and answered with an
   *   access token (sent as `Authorization: Bearer …`) or `null`; after the server
   *   refuses a token with `401` it is called once more with `refresh: true` and the
   *   server's `WWW-Authenticate`, and a different token is sent in a retry. The token
   *   never enters the guest. This host runs no OAuth flow of its own
   * @param {'main' | 'worker'} [options.thread] where the guest runs. `'main'` (the
   *   default): on this thread, in turns from the event loop, so a call crosses no
   *   thread; guest code then shares this event loop. `'worker'`: on a worker thread of
   *   its own, so this event loop never runs guest code, at the cost of four thread
   *   crossings per call (docs/PERFORMANCE.md). Either way a guest that loops without
   *   returning is not interrupted: on the main thread it would freeze this event loop
   * @param {number} [options.busyPoll] with `thread: 'main'`, how long the event loop
   *   keeps polling after a turn that ran out of work before it may sleep, in
   *   microseconds (default 50, as the wasmtime host's `--busy-poll`; 0 sleeps at once).
   *   An answer or a caller's next job that comes within it is taken without a
   *   wake-up; the window shrinks while answers come later (docs/PERFORMANCE.md)
   * @returns {Promise<McpBox>} rejects with a `ConfigError` when the configuration as a
   *   whole is unusable
   */
  static async open(options = {}) {
    let { configText, origin } = options;
    if (options.configFile !== undefined) {
      origin = options.configFile;
      configText = await readConfig(options.configFile);
    }
    if (typeof configText !== 'string') {
      throw new TypeError('McpBox.open needs `configText` (a string) or `configFile`');
    }
    if (Buffer.byteLength(configText, 'utf8') > MAX_CONFIG_BYTES) throw tooLarge(origin);
    const memoryLimit = options.memoryLimit ?? DEFAULT_MEMORY_LIMIT;
    if (!Number.isSafeInteger(memoryLimit) || memoryLimit <= 0) {
      throw new TypeError(`memoryLimit must be a positive number of bytes, not ${memoryLimit}`);
    }
    if (!compiled.has(memoryLimit)) {
      compiled.set(
        memoryLimit,
        compileGuest(memoryLimit).catch((error) => {
          compiled.delete(memoryLimit);
          throw error;
        }),
      );
    }
    const modules = await compiled.get(memoryLimit);
    const policy = {
      allowProcesses: options.allowProcesses ?? true,
      allowNetwork: options.allowNetwork ?? true,
      maxMessageBytes: options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
      // Servers run beside the configuration file that names them (its canonical
      // directory), as in the wasmtime host (host/src/transport/places.rs): what a
      // relative program names is decided by the file, not by where Node was started.
      // Configuration text keeps the process's directory: the embedder chose both.
      workingDir: options.configFile === undefined ? null : await configDir(options.configFile),
    };
    const cacheDir = options.cacheDir === undefined ? defaultCacheDir() : options.cacheDir;
    const maxResultFilesBytes = options.maxResultFilesBytes ?? DEFAULT_MAX_RESULT_FILES_BYTES;
    for (const [name, value] of [
      ['maxResultBytes', options.maxResultBytes],
      ['maxResultFilesBytes', maxResultFilesBytes],
    ]) {
      if (value !== undefined && !(Number.isSafeInteger(value) && value >= 0)) {
        throw new TypeError(`${name} must be a number of bytes (0 or more), not ${value}`);
      }
    }
    if (options.auditFile !== undefined && (typeof options.auditFile !== 'string' || options.auditFile === '')) {
      throw new TypeError(`auditFile must be a file name, not ${JSON.stringify(options.auditFile)}`);
    }
    const results = {
      dir: options.resultsDir === undefined ? defaultResultsDir(cacheDir) : options.resultsDir,
      maxFileBytes: policy.maxMessageBytes,
      maxTotalBytes: maxResultFilesBytes,
    };
    const embedder = {
      maxResultBytes: options.maxResultBytes ?? null,
      inlineMedia: options.inlineMedia ?? null,
      auditFile: options.auditFile === undefined ? null : resolvePath(options.auditFile),
      auditEvents: options.auditEvents === true,
      auditArguments: options.auditArguments ?? null,
      claudeSettings: options.claudeSettings === true,
    };
    const tokenProvider = options.tokenProvider ?? null;
    if (tokenProvider !== null && typeof tokenProvider !== 'function') {
      throw new TypeError('tokenProvider must be a function ({server, url, refresh, wwwAuthenticate}) => token');
    }
    const roots = options.roots === undefined ? null : rootsOf(options.roots);
    const thread = options.thread ?? 'main';
    if (thread !== 'main' && thread !== 'worker') {
      throw new TypeError(`thread must be 'main' or 'worker', not ${JSON.stringify(thread)}`);
    }
    const busyPoll = options.busyPoll ?? DEFAULT_BUSY_POLL_US;
    if (!(Number.isFinite(busyPoll) && busyPoll >= 0 && busyPoll <= 1_000_000)) {
      throw new TypeError(`busyPoll must be a number of microseconds from 0 to 1,000,000, not ${busyPoll}`);
    }
    const box = new McpBox(policy, modules, origin ?? 'config', configText, cacheDir, {
      thread,
      busyPoll,
      tokenProvider,
      roots,
      sampling: options.sampling === true,
      urlElicitation: options.urlElicitation === true,
      inputRequests: options.inputRequests === true,
      approvals: options.approvals === true,
      memoryLimit,
      results,
      embedder,
    });
    await box.#loaded;
    if (options.configFile !== undefined) {
      box.#configFile = options.configFile;
      box.#applied = configText;
      if (options.watchConfig === true) {
        box.#watch(options.watchDebounceMs ?? DEFAULT_WATCH_DEBOUNCE_MS);
      }
    }
    return box;
  }

  /** Names the configuration in messages. */
  #origin;
  /** @type {(msg: object) => void} delivers a message to the driver */
  #toDriver;
  #table;
  #grants;
  #http;
  /** @type {Promise<void>} resolves once the configuration is loaded */
  #loaded;
  #servers = Object.freeze([]);
  #tools = Object.freeze([]);
  #issues = Object.freeze([]);
  /** The driver's count of guest crossings, as of its last update (`guestCrossings`). */
  #crossings = 0;
  /** @type {string | null} why the runtime stopped, once it has */
  #stopped = null;
  /** @type {Promise<void>} resolves once the driver and every server have stopped */
  #finished;
  /** Calls in flight, by id: `{ resolve, reject }`. */
  #calls = new Map();
  #nextCall = 1;
  /** Reconnects waiting for the driver's answer: id → { resolve, reject }. */
  #reconnects = new Map();
  /** `adaptedTools` waiting for the driver: id → {resolve, reject}. */
  #adapted = new Map();
  /** Input answers waiting for the driver's verdict: id → { resolve, reject }. */
  #answers = new Map();
  /** `ready()` callers waiting for the servers to settle. */
  #waiters = [];
  /** Reloads waiting for the driver's answer: id → { resolve, reject, origin, fileEvents }. */
  #reloads = new Map();
  /** Reloads run one at a time, in the order asked. */
  #reloading = Promise.resolve();
  /** The configuration file, when opened from one (for `reload`). */
  #configFile = null;
  /** The text the watcher last applied (a save of the same text is no change). */
  #applied = null;
  /** @type {import('node:fs').FSWatcher | null} */
  #watcher = null;
  #watchTimer = null;

  /** @private use `McpBox.open` */
  constructor(policy, modules, origin, configText, cacheDir, { thread, busyPoll, inputRequests, sampling, urlElicitation, approvals, memoryLimit, results, embedder, tokenProvider, roots }) {
    super();
    this.#origin = origin;
    // Warnings found while the driver asks something of the host reach listeners after
    // the turn, never inside the guest.
    const warn = (message) => queueMicrotask(() => this.emit('event', { type: 'warning', message }));
    this.#table = new ConnectionTable(policy, (conn, items, paused) => this.#post({ t: 'in', conn, items, paused }), warn);
    this.#grants = new Grants(policy);
    this.#http = new HttpExchanges(this.#grants, (msg) => this.#post(msg), { tokenProvider, warn });
    let loaded;
    this.#loaded = new Promise((resolve, reject) => {
      loaded = { resolve, reject };
    });
    let finished;
    this.#finished = new Promise((resolve) => {
      finished = resolve;
    });
    /** Once the driver has stopped: every server and exchange ends. */
    const finish = async () => {
      await Promise.all([this.#table.closeAll(), this.#http.closeAll()]);
      finished();
    };
    const options = {
      modules,
      glueUrl: new URL(GLUE, GEN_DIR).href,
      origin,
      configText,
      cacheDir,
      inputRequests,
      sampling,
      urlElicitation,
      approvals,
      memoryLimit,
      results,
      embedder,
      roots,
      maxMessageBytes: policy.maxMessageBytes,
      busyPollUs: busyPoll,
    };
    if (thread === 'main') {
      const receive = (msg) => {
        this.#receive(msg, loaded);
        if (msg.t === 'stopped') {
          finish();
        }
      };
      this.#toDriver = startDriver(options, receive, (msg) => this.#answer(msg));
      return;
    }
    const bell = new Doorbell();
    const { port1: port, port2 } = new MessageChannel();
    const worker = new Worker(new URL('./driver_worker.js', import.meta.url), {
      workerData: { port: port2, bell: bell.buffer, ...options },
      transferList: [port2],
    });
    this.#toDriver = (msg) => {
      port.postMessage(msg);
      bell.ring();
    };
    port.on('message', (msg) => {
      if (msg.req !== undefined) {
        this.#reply(port, bell, msg);
      } else {
        this.#receive(msg, loaded);
      }
    });
    worker.once('error', (error) => this.#stop(`the driver failed: ${error.message}`, loaded));
    worker.once('exit', () => {
      // What the driver posted before it ended may not have been handled yet.
      for (let m = receiveMessageOnPort(port); m !== undefined; m = receiveMessageOnPort(port)) {
        this.#receive(m.message, loaded);
      }
      this.#stop('the driver exited', loaded);
      port.close();
      finish();
    });
  }

  /** Problems found in the configuration; entries with problems were skipped. */
  configIssues() {
    return this.#issues;
  }

  /** Every configured server and its current state. */
  servers() {
    return this.#servers;
  }

  /** Every tool in the registry, ordered by name. */
  tools() {
    return this.#tools;
  }

  /**
   * How many times the driver has entered the guest (an export call) and the guest has
   * called the `transport` imports that move messages (`send`, `receive`, `subscribe`),
   * as of the driver's last update: a sequential call to a stdio server costs two, the
   * step that sends it and the step that takes its answer. For tests and benchmarks of
   * the boundary's cost, as the wasmtime host's `Runtime::guest_crossings` (the clock
   * and `poll` are not counted).
   */
  guestCrossings() {
    return this.#crossings;
  }

  /**
   * Waits until no server is starting any more (each is connected, failed or closed).
   *
   * @returns {Promise<object[]>} the servers' states
   */
  ready() {
    if (this.#settled()) {
      return Promise.resolve(this.#servers);
    }
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /**
   * Calls a tool by its namespaced name. A tool that reports failure resolves with
   * `isError: true`; a rejection (`CallError`) means no tool result was produced.
   *
   * @param {string} name e.g. `mcp__demo__echo`
   * @param {object | null} [args] the arguments object (`null` or absent for none)
   * @param {{timeoutMs?: number, signal?: AbortSignal, task?: boolean}} [options] `timeoutMs`
   *   overrides the server's tool timeout; aborting `signal` cancels the call (the
   *   server is sent `notifications/cancelled`, or `tasks/cancel` for a task); `task: true`
   *   runs it as a task (MCP 2025-11-25) when its tool allows one (`execution.taskSupport:
   *   optional`; a tool that requires one always runs as one), its statuses arriving as
   *   `task-status` events; a tool that takes no task rejects with `invalid-arguments`
   * @returns {Promise<{isError: boolean, text: string, content: object[], structuredContent: object | null}>}
   */
  callTool(name, args, options = {}) {
    let text;
    try {
      text = args === undefined || args === null ? '' : JSON.stringify(args);
    } catch (error) {
      return Promise.reject(new CallError('invalid-arguments', `the arguments are not JSON: ${error.message}`));
    }
    return this.callToolJson(name, text, options);
  }

  /** Like `callTool`, with the arguments as JSON text. */
  callToolJson(name, argumentsJson, options = {}) {
    return this.#call(name, argumentsJson, options, undefined);
  }

  /**
   * Every tool in the registry in a model provider's format, as `mcpbox tools --format
   * DIALECT --json` prints it: definitions to hand the provider as they are, what each
   * conversion lost, and the tools the dialect cannot represent with why. The
   * conversions are the guest's (`registry.adapted-tools`), cached per tool and dialect.
   *
   * @param {'mcp' | 'openai' | 'openai-strict' | 'anthropic' | 'gemini'} dialect
   * @returns {Promise<{dialect: string, tools: {name: string, registryName: string,
   *   definition: object, responsesDefinition?: object, adapterNotes: {kind: string,
   *   pointer: string, lost: string}[]}[], refused: {name: string, pointer: string,
   *   reason: string}[]}>} rejects with an `Error` naming the dialects for any other name
   */
  adaptedTools(dialect) {
    if (typeof dialect !== 'string') {
      return Promise.reject(new TypeError('adaptedTools needs a dialect name'));
    }
    if (this.#stopped !== null) {
      return Promise.reject(new Error(`the mcpbox runtime stopped: ${this.#stopped}`));
    }
    const id = this.#nextCall++;
    return new Promise((resolve, reject) => {
      this.#adapted.set(id, { resolve, reject });
      this.#post({ t: 'job', job: { kind: 'adapted-tools', id, dialect } });
    });
  }

  /**
   * Calls a tool as a model saw it in `dialect` (see `adaptedTools`): `name` is the
   * adapted name (a registry name also works) and `args` were written under the adapted
   * schema; the guest maps them back to what the server's own schema expects (strict
   * mode's `null` for an optional property, Gemini's fitted parameter names), which then
   * decides whether they are valid, as for any call. Options and result as `callTool`.
   */
  callAdaptedTool(dialect, name, args, options = {}) {
    let text;
    try {
      text = args === undefined || args === null ? '' : JSON.stringify(args);
    } catch (error) {
      return Promise.reject(new CallError('invalid-arguments', `the arguments are not JSON: ${error.message}`));
    }
    if (typeof dialect !== 'string') {
      return Promise.reject(new TypeError('callAdaptedTool needs a dialect name'));
    }
    return this.#call(name, text, options, dialect);
  }

  #call(name, argumentsJson, { timeoutMs, signal, task } = {}, dialect) {
    if (typeof name !== 'string' || typeof argumentsJson !== 'string') {
      return Promise.reject(new TypeError('callToolJson needs a tool name and the arguments as strings'));
    }
    if (timeoutMs !== undefined && !(Number.isFinite(timeoutMs) && timeoutMs >= 0)) {
      return Promise.reject(new TypeError(`timeoutMs must be a non-negative number, not ${timeoutMs}`));
    }
    if (task !== undefined && typeof task !== 'boolean') {
      return Promise.reject(new TypeError(`task must be a boolean, not ${task}`));
    }
    if (this.#stopped !== null) {
      return Promise.reject(new CallError('runtime', `the mcpbox runtime stopped: ${this.#stopped}`));
    }
    if (signal?.aborted) {
      return Promise.reject(new CallError('cancelled', 'the call was cancelled'));
    }
    const id = this.#nextCall++;
    return new Promise((resolve, reject) => {
      let onAbort = null;
      if (signal) {
        onAbort = () => this.#post({ t: 'job', job: { kind: 'cancel', id } });
        signal.addEventListener('abort', onAbort, { once: true });
      }
      const settle = (fn) => (value) => {
        signal?.removeEventListener('abort', onAbort);
        fn(value);
      };
      this.#calls.set(id, { tool: name, resolve: settle(resolve), reject: settle(reject) });
      const timeout = timeoutMs === undefined ? null : Math.floor(Math.min(timeoutMs, Number.MAX_SAFE_INTEGER));
      const job = { kind: 'call', id, tool: name, arguments: argumentsJson, timeoutMs: timeout, task: task === true };
      if (dialect !== undefined) {
        job.dialect = dialect;
      }
      this.#post({ t: 'job', job });
    });
  }

  /**
   * Starts a request beyond tools (`registry.start-request`); resolves with the
   * guest's result (`{isError, text, content, structuredContent, answer}`, see the
   * WIT's `server-request` for what each holds: `content` is the server's objects
   * whole, which this API hands over, and `answer` the `request-answer` records the
   * guest read of them) or rejects with a `CallError`.
   */
  #request(server, request, label, { timeoutMs, signal } = {}) {
    if (server !== null && typeof server !== 'string') {
      return Promise.reject(new TypeError(`${label}: the server must be a configured server name`));
    }
    if (this.#stopped !== null) {
      return Promise.reject(new CallError('runtime', `the mcpbox runtime stopped: ${this.#stopped}`));
    }
    if (signal?.aborted) {
      return Promise.reject(new CallError('cancelled', 'the request was cancelled'));
    }
    const id = this.#nextCall++;
    return new Promise((resolve, reject) => {
      let onAbort = null;
      if (signal) {
        onAbort = () => this.#post({ t: 'job', job: { kind: 'cancel', id } });
        signal.addEventListener('abort', onAbort, { once: true });
      }
      const settle = (fn) => (value) => {
        signal?.removeEventListener('abort', onAbort);
        fn(value);
      };
      this.#calls.set(id, { tool: label, request: true, resolve: settle(resolve), reject: settle(reject) });
      const timeout = timeoutMs === undefined ? null : Math.floor(Math.min(timeoutMs, Number.MAX_SAFE_INTEGER));
      this.#post({ t: 'job', job: { kind: 'request', id, server, request, timeoutMs: timeout } });
    });
  }

  /**
   * The resources of `server`, or of every connected server that offers them (all
   * pages). Each is the server's object with `server` (the configured name) added.
   *
   * @param {string | null} [server]
   * @returns {Promise<object[]>}
   */
  async listResources(server = null, options = {}) {
    return (await this.#request(server, { tag: 'list-resources' }, 'resources/list', options)).content;
  }

  /** The resource templates of `server`, or of every server (malformed ones left out). */
  async listResourceTemplates(server = null, options = {}) {
    return (await this.#request(server, { tag: 'list-resource-templates' }, 'resources/templates/list', options))
      .content;
  }

  /**
   * Reads `uri` from `server`, or from the first server (in configuration order)
   * that has it. Items past the output limit are in host files: such an item is a
   * text item saying where, with `_meta["mcpbox/file"]` `{uri, mimeType, size}`.
   *
   * @returns {Promise<{contents: object[], text: string}>}
   */
  async readResource(uri, server = null, options = {}) {
    if (typeof uri !== 'string') {
      throw new TypeError('readResource needs a URI string');
    }
    const r = await this.#request(server, { tag: 'read-resource', val: uri }, `resources/read ${uri}`, options);
    return { contents: r.content, text: r.text };
  }

  /**
   * The tasks (MCP 2025-11-25 `tasks/list`) of `server`, or of every server that
   * declared `tasks.list`: each as the server lists it (`taskId`, `status`, maybe
   * `statusMessage`, `createdAt`, `lastUpdatedAt`, `ttl`, `pollInterval`) with `server` added.
   */
  async listTasks(server = null, options = {}) {
    return (await this.#request(server, { tag: 'list-tasks' }, 'tasks/list', options)).content;
  }

  /**
   * The skills (the `io.modelcontextprotocol/skills` extension) of `server`, or of
   * every server that serves them: each entry (`uri` of its SKILL.md,
   * `frontmatter`, `resources`) with `server` added. No skill file is read.
   */
  async listSkills(server = null, options = {}) {
    return (await this.#request(server, { tag: 'list-skills' }, 'skills/list', options)).content;
  }

  /**
   * Loads skill `skill` of `server` (its name in the server's listing, after
   * `listSkills`, or its SKILL.md URI): its SKILL.md, verified against the
   * server's entry (size, SHA-256 digest, frontmatter). A mismatch rejects with
   * a `CallError` naming the server, the skill and the mismatch.
   *
   * @returns {Promise<{text: string, contents: object[], entry: object}>}
   */
  async loadSkill(server, skill, options = {}) {
    if (typeof server !== 'string' || typeof skill !== 'string') {
      throw new TypeError('loadSkill needs a server name and a skill name or URI');
    }
    const r = await this.#request(server, { tag: 'load-skill', val: skill }, `skill ${skill}`, options);
    return { text: r.text, contents: r.content, entry: r.structuredContent };
  }

  /**
   * Reads file `file` (its path in the skill, or its URI) of the loaded skill
   * `skill` of `server`, verified against the skill's entry.
   *
   * @returns {Promise<{contents: object[], text: string}>}
   */
  async readSkillFile(server, skill, file, options = {}) {
    if (typeof server !== 'string' || typeof skill !== 'string' || typeof file !== 'string') {
      throw new TypeError('readSkillFile needs a server name, a skill and a file');
    }
    const request = { tag: 'read-skill-file', val: { skill, file } };
    const r = await this.#request(server, request, `skill file ${file}`, options);
    return { contents: r.content, text: r.text };
  }

  /**
   * The prompts of `server`, or of every server. Each has `server` and
   * `registryName` (`mcp__{server}__{prompt}`) added.
   */
  async listPrompts(server = null, options = {}) {
    return (await this.#request(server, { tag: 'list-prompts' }, 'prompts/list', options)).content;
  }

  /**
   * Gets prompt `name` (its own name) of `server` with `args` (an object of strings).
   *
   * @returns {Promise<{description: string | null, messages: object[], text: string}>}
   */
  async getPrompt(server, name, args = null, options = {}) {
    if (typeof server !== 'string' || typeof name !== 'string') {
      throw new TypeError('getPrompt needs a server name and a prompt name');
    }
    const request = {
      tag: 'get-prompt',
      val: { name, arguments: args === null ? undefined : JSON.stringify(args) },
    };
    const r = await this.#request(server, request, `prompts/get ${name}`, options);
    // The messages go over whole, as the server wrote them; the description is
    // read by the guest (`request-answer.prompt`).
    const description = r.answer?.tag === 'prompt' ? (r.answer.val.description ?? null) : null;
    return { description, messages: r.content, text: r.text };
  }

  /**
   * Asks `server` for completions (`completion/complete`); `params` holds `ref`,
   * `argument` and maybe `context`.
   *
   * @returns {Promise<{values: string[], total?: number, hasMore?: boolean}>}
   */
  async complete(server, params, options = {}) {
    const r = await this.#request(server, { tag: 'complete', val: JSON.stringify(params) }, 'completion/complete', options);
    return r.structuredContent;
  }

  /**
   * Follows the resource `uri` of `server` (null: every connected server that declared
   * `resources.subscribe`; it holds when one took it): each change is a
   * `{ type: 'resource-updated', server, uri }` event. `resources/subscribe` for a 2025
   * server, the `resourceSubscriptions` of `subscriptions/listen` for a 2026-07-28 one;
   * kept across reconnects.
   */
  async subscribeResource(uri, server = null, options = {}) {
    if (typeof uri !== 'string') {
      throw new TypeError('subscribeResource needs a URI string');
    }
    await this.#request(server, { tag: 'subscribe-resource', val: uri }, `resources/subscribe ${uri}`, options);
  }

  /** Stops following the resource `uri` (see `subscribeResource`). */
  async unsubscribeResource(uri, server = null, options = {}) {
    if (typeof uri !== 'string') {
      throw new TypeError('unsubscribeResource needs a URI string');
    }
    await this.#request(server, { tag: 'unsubscribe-resource', val: uri }, `resources/unsubscribe ${uri}`, options);
  }

  /** Sets the lowest log level `server` sends (`logging/setLevel`). */
  async setLogLevel(server, level, options = {}) {
    await this.#request(server, { tag: 'set-log-level', val: level }, 'logging/setLevel', options);
  }

  /**
   * Connects the server `server` afresh, now, and forgets its failures. A server that
   * exits or drops its connection is restarted by the next call to one of its tools,
   * after a backoff (1 s after the first failure in a row, doubling up to 30 s); after
   * 5 failures in a row it is not restarted until this is called. A connected server
   * is disconnected first (its calls in flight fail with `server-unavailable`).
   *
   * @param {string} server the configured server name
   * @returns {Promise<void>} resolves once the server is starting (see `servers()`);
   *   rejects with an `Error` when no server of that name is configured, it is
   *   disabled, or the runtime stopped
   */
  reconnect(server) {
    if (typeof server !== 'string') {
      return Promise.reject(new TypeError('reconnect needs a server name'));
    }
    if (this.#stopped !== null) {
      return Promise.reject(new Error(`the mcpbox runtime stopped: ${this.#stopped}`));
    }
    const id = this.#nextCall++;
    return new Promise((resolve, reject) => {
      this.#reconnects.set(id, { resolve, reject });
      this.#post({ t: 'job', job: { kind: 'reconnect', id, server } });
    });
  }

  /**
   * Reads the configuration file again and applies it as a diff, in the guest, as the
   * wasmtime host's `Runtime::reload` does: servers whose entry did not change keep
   * running with their calls in flight; removed ones are shut down (their calls fail
   * with `server-unavailable` naming the reload); added and changed ones start; an
   * entry that now has a problem keeps its running definition. A `reloaded` event
   * follows the status events.
   *
   * @returns {Promise<object>} the report `{ origin, added, removed, restarted, updated,
   *   unchanged, kept, issues, fileEvents }`; rejects with a `ConfigError` (and emits
   *   `reload-failed`) when the text as a whole is unusable (its line and column) or the
   *   file cannot be read — the running configuration stays — and with an `Error` when
   *   the box was opened from text or stopped. A missing file is an empty configuration.
   */
  async reload() {
    if (this.#configFile === null) {
      throw new Error('this box was opened from configuration text, not a file: use reloadText');
    }
    const origin = this.#configFile;
    let text;
    try {
      // The same bounded read as a start (16 MiB at most).
      text = await readConfig(origin);
    } catch (error) {
      this.emit('event', { type: 'reload-failed', origin, error: error.message });
      throw error;
    }
    return this.#apply(origin, text, 0);
  }

  /**
   * Applies configuration text as a diff, as `reload()` does; `origin` names it in
   * messages.
   *
   * @param {string} origin
   * @param {string} text
   */
  reloadText(origin, text) {
    if (typeof origin !== 'string' || typeof text !== 'string') {
      return Promise.reject(new TypeError('reloadText needs an origin and the text as strings'));
    }
    // The cap of a start: refused before it enters the guest.
    if (Buffer.byteLength(text, 'utf8') > MAX_CONFIG_BYTES) {
      const error = tooLarge(origin);
      this.emit('event', { type: 'reload-failed', origin, error: error.message });
      return Promise.reject(error);
    }
    return this.#apply(origin, text, 0);
  }

  /** Sends one reload to the driver, after the reloads before it. */
  #apply(origin, text, fileEvents) {
    const result = this.#reloading.then(
      () =>
        new Promise((resolve, reject) => {
          if (this.#stopped !== null) {
            reject(new Error(`the mcpbox runtime stopped: ${this.#stopped}`));
            return;
          }
          const id = this.#nextCall++;
          this.#reloads.set(id, { resolve, reject, origin, text, fileEvents });
          this.#post({ t: 'job', job: { kind: 'reload', id, origin, text } });
        }),
    );
    this.#reloading = result.catch(() => {});
    return result;
  }

  /**
   * Watches the configuration file's directory (not the file: a save that renames a
   * new file over the old one replaces what a file watch follows) with Node's own
   * `fs.watch`, and applies the file once it has been quiet for `debounceMs`. No npm
   * package is needed for this: `fs.watch` on a directory reports renames and writes
   * on Linux, macOS and Windows, which is all a single file needs (chokidar and the
   * like add globbing and polling fallbacks this does not use).
   */
  #watch(debounceMs) {
    const file = this.#configFile;
    const name = basename(file);
    let events = 0;
    const look = async () => {
      this.#watchTimer = null;
      const folded = events;
      events = 0;
      if (this.#stopped !== null) {
        return;
      }
      let text;
      try {
        // The same bounded read as a start; null when the file is gone.
        text = await readConfig(file, null);
      } catch (error) {
        text = error;
      }
      if (typeof text !== 'string') {
        const message =
          text === null
            ? `${file} was deleted; the running configuration stays until the file is back`
            : `${text.message}; the running configuration stays`;
        this.#watchFailed = true;
        this.emit('event', { type: 'reload-failed', origin: file, error: message });
        return;
      }
      if (text === this.#applied && !this.#watchFailed) {
        return;
      }
      try {
        await this.#apply(file, text, folded);
        this.#applied = text;
        this.#watchFailed = false;
      } catch {
        // The `reload-failed` event said why.
        this.#watchFailed = true;
      }
    };
    this.#watcher = watchDirectory(dirname(file), (_type, filename) => {
      // Some platforms do not name the file: then it may be ours.
      if (filename !== null && filename !== name) {
        return;
      }
      events += 1;
      clearTimeout(this.#watchTimer);
      this.#watchTimer = setTimeout(look, debounceMs);
    });
    this.#watcher.on('error', (error) => {
      this.emit('event', {
        type: 'reload-failed',
        origin: file,
        error: `${file} is no longer watched: ${error.message}`,
      });
    });
    // The servers keep the process alive until `shutdown()`; the watcher need not.
    this.#watcher.unref();
  }

  /** Whether the watcher's last look at the file failed (then an unchanged text applies again). */
  #watchFailed = false;

  /**
   * Answers an input request (an `input-requested` event), that is an MCP elicitation
   * (`elicitation/create`, and `input_required` results in 2026-07-28). An accepted answer
   * goes to the server with the requested schema's defaults filled in for the fields it
   * leaves out. A `sampling-requested` event (MCP sampling) is answered the same way:
   * `{ action: 'accept', content: { role: 'assistant', content: { type: 'text', text },
   * model } }` (a `CreateMessageResult`), or `{ action: 'decline' }` to refuse.
   *
   * @param {number} id the event's `id`
   * @param {{action: 'accept', content?: object} | {action: 'decline'} | {action: 'cancel'}} answer
   * @returns {Promise<void>} rejects with an `Error` when no request of that id is
   *   waiting (answered already, or withdrawn), when accepted content is not an object
   *   satisfying the requested schema (the request then stays open), or when the
   *   runtime stopped
   */
  answerInput(id, answer) {
    if (!Number.isSafeInteger(id) || id < 0) {
      return Promise.reject(new TypeError(`answerInput needs a request id, not ${id}`));
    }
    let wit;
    switch (answer?.action) {
      case 'accept':
        try {
          wit = { tag: 'accept', val: JSON.stringify(answer.content ?? {}) };
        } catch (error) {
          return Promise.reject(new TypeError(`the answer's content is not JSON: ${error.message}`));
        }
        break;
      case 'decline':
      case 'cancel':
        wit = { tag: answer.action };
        break;
      default:
        return Promise.reject(new TypeError("answerInput needs { action: 'accept' | 'decline' | 'cancel' }"));
    }
    if (this.#stopped !== null) {
      return Promise.reject(new Error(`the mcpbox runtime stopped: ${this.#stopped}`));
    }
    const req = this.#nextCall++;
    return new Promise((resolve, reject) => {
      this.#answers.set(req, { resolve, reject });
      this.#post({ t: 'job', job: { kind: 'answer', id: req, input: id, answer: wit } });
    });
  }

  /**
   * Sets the directories servers may work in (MCP roots), replacing `McpBox.open`'s
   * `roots`, or with `null` going back to the configuration's top-level `roots`. As the
   * wasmtime host's `Runtime::set_roots`: a server entry's own `roots` still win, a
   * sandboxed server gets at most its grants, running 2025 servers whose roots change
   * are sent `notifications/roots/list_changed` (one connected without roots is
   * reconnected to be offered them), and a guest that replaces a failed one keeps them.
   *
   * @param {Array<string | {uri: string, name?: string}> | null} roots absolute paths or
   *   `file://` URIs, each maybe with a name
   * @returns {Promise<void>} rejects naming the root when one is not an absolute path or
   *   a local `file://` URI (nothing changes then), or when the runtime stopped
   */
  setRoots(roots) {
    let wit;
    try {
      wit = roots === null ? null : rootsOf(roots);
    } catch (error) {
      return Promise.reject(error);
    }
    if (this.#stopped !== null) {
      return Promise.reject(new Error(`the mcpbox runtime stopped: ${this.#stopped}`));
    }
    const req = this.#nextCall++;
    return new Promise((resolve, reject) => {
      this.#answers.set(req, { resolve, reject });
      this.#post({ t: 'job', job: { kind: 'roots', id: req, roots: wit } });
    });
  }

  /**
   * What the host knows about a stdio server's latest process, without entering the
   * guest: `{ stderrTail, skippedLines, oversizedMessages, exitStatus }` (`exitStatus`
   * as "exit code 3" or "signal 9", `null` while it runs), or `null` if the server never
   * had a process (remote servers have none: the guest's own notes on their HTTP
   * exchanges appear in their errors).
   *
   * @param {string} server the configured name
   */
  diagnostics(server) {
    const d = this.#table.latestDiagnostics(server);
    if (d === null) {
      return null;
    }
    return {
      stderrTail: d.stderrTail,
      skippedLines: Number(d.skippedLines),
      oversizedMessages: Number(d.oversizedMessages),
      exitStatus: d.exitStatus ?? null,
      // This host confines no server (see transport.js).
      sandbox: d.sandbox ?? null,
    };
  }

  /**
   * Closes every connection and stops every server; resolves once every server
   * process has exited. Calls in flight fail with `server-unavailable`, later calls
   * with `runtime`.
   */
  async shutdown() {
    if (this.#stopped === null) {
      this.#post({ t: 'job', job: { kind: 'shutdown' } });
    }
    await this.#finished;
  }

  #post(msg) {
    this.#toDriver(msg);
  }

  /** The host side's answer to one of the driver's requests (`req`). */
  #answer(msg) {
    switch (msg.t) {
      case 'open':
        return this.#table.open(msg.server, msg.endpoint);
      case 'diag':
        return this.#table.diagnostics(msg.conn);
      case 'grant':
        return this.#grants.open(msg.server, msg.endpoint);
      case 'same-origin':
        return this.#grants.sameOrigin(msg.authority, msg.url);
      default:
        throw new Error(`mcpbox: unexpected request from the driver: ${JSON.stringify(msg.t)}`);
    }
  }

  /** Answers a worker's request; a failure is posted as a `fault`, which traps the guest. */
  #reply(port, bell, msg) {
    let reply;
    try {
      reply = { t: 'reply', req: msg.req, value: this.#answer(msg) };
    } catch (error) {
      reply = { t: 'reply', req: msg.req, fault: String(error?.stack ?? error) };
    }
    port.postMessage(reply);
    bell.ring();
  }

  #receive(msg, loaded) {
    switch (msg.t) {
      case 'send':
        this.#table.send(msg.conn, msg.message);
        break;
      case 'close':
        this.#table.close(msg.conn);
        break;
      case 'taken':
        this.#table.taken(msg.conn, msg.count);
        break;
      case 'grant-drop':
        this.#grants.drop(msg.authority);
        break;
      case 'http':
        this.#http.start(msg);
        break;
      case 'http-body':
        this.#http.body(msg.ex, msg.body);
        break;
      case 'http-taken':
        this.#http.taken(msg.ex, msg.bytes);
        break;
      case 'http-close':
        this.#http.close(msg.ex);
        break;
      case 'loaded':
        if (msg.error !== undefined) {
          loaded.reject(new ConfigError(this.#origin, msg.error));
        } else {
          this.#issues = Object.freeze(msg.issues.map((i) => Object.freeze(configIssue(i))));
          this.#servers = snapshot(msg.servers, serverStatus);
          this.#tools = snapshot(msg.tools, toolInfo);
          loaded.resolve();
        }
        break;
      case 'update':
        this.#update(msg);
        break;
      case 'adapted': {
        const waiter = this.#adapted.get(msg.id);
        this.#adapted.delete(msg.id);
        if (msg.error === null) {
          waiter?.resolve(adaptedTools(msg.result));
        } else {
          waiter?.reject(new Error(msg.error));
        }
        break;
      }
      case 'reconnected': {
        const waiter = this.#reconnects.get(msg.id);
        this.#reconnects.delete(msg.id);
        if (msg.error === null) {
          waiter?.resolve();
        } else {
          waiter?.reject(new Error(msg.error));
        }
        break;
      }
      case 'reloaded': {
        const waiter = this.#reloads.get(msg.id);
        this.#reloads.delete(msg.id);
        if (waiter === undefined) {
          break;
        }
        if (msg.error === null) {
          const report = reloadReport(waiter.origin, msg.report, waiter.fileEvents);
          this.#issues = Object.freeze(report.issues.map((i) => Object.freeze(i)));
          this.emit('event', { type: 'reloaded', report });
          waiter.resolve(report);
        } else {
          this.emit('event', { type: 'reload-failed', origin: waiter.origin, error: msg.error });
          waiter.reject(new ConfigError(waiter.origin, msg.error));
        }
        break;
      }
      case 'answered':
      case 'roots-set': {
        const waiter = this.#answers.get(msg.id);
        this.#answers.delete(msg.id);
        if (msg.error === null) {
          waiter?.resolve();
        } else {
          waiter?.reject(new Error(msg.error));
        }
        break;
      }
      case 'stopped':
        this.#stop(msg.reason, loaded);
        break;
      default:
        throw new Error(`mcpbox: unexpected message from the driver: ${JSON.stringify(msg.t)}`);
    }
  }

  #update({ servers, tools, events, done, crossings }) {
    this.#crossings = crossings;
    // Snapshots before answers and events, so that a caller whose call failed because
    // its server died also sees that server failed.
    if (tools !== undefined) {
      this.#tools = snapshot(tools, toolInfo);
    }
    if (servers !== undefined) {
      this.#servers = snapshot(servers, serverStatus);
    }
    for (const { id, outcome } of done) {
      const call = this.#calls.get(id);
      if (call !== undefined) {
        this.#calls.delete(id);
        if (outcome.tag === 'ok') {
          const result = callResult(outcome.val, call.tool);
          if (result instanceof CallError) {
            call.reject(result);
          } else {
            if (call.request) {
              // What the guest read of a request's result (the WIT's `request-answer`).
              result.answer = outcome.val.answer ?? null;
            }
            call.resolve(result);
          }
        } else {
          call.reject(callError(outcome.val));
        }
      }
    }
    this.#wakeWaiters();
    for (const e of events) {
      this.emit('event', event(e));
    }
  }

  #settled() {
    return this.#stopped !== null || !this.#servers.some((s) => s.state === 'starting');
  }

  #wakeWaiters() {
    if (this.#waiters.length > 0 && this.#settled()) {
      const waiters = this.#waiters;
      this.#waiters = [];
      for (const resolve of waiters) {
        resolve(this.#servers);
      }
    }
  }

  #stop(reason, loaded) {
    if (this.#stopped !== null) {
      return;
    }
    this.#stopped = reason;
    loaded.reject(new Error(`mcpbox: the runtime stopped before it was ready: ${reason}`));
    for (const call of this.#calls.values()) {
      call.reject(new CallError('runtime', `the mcpbox runtime stopped: ${reason}`));
    }
    this.#calls.clear();
    for (const waiter of [
      ...this.#reconnects.values(),
      ...this.#adapted.values(),
      ...this.#answers.values(),
      ...this.#reloads.values(),
    ]) {
      waiter.reject(new Error(`the mcpbox runtime stopped: ${reason}`));
    }
    this.#reconnects.clear();
    this.#adapted.clear();
    this.#answers.clear();
    this.#reloads.clear();
    this.#watcher?.close();
    clearTimeout(this.#watchTimer);
    this.#wakeWaiters();
  }
}

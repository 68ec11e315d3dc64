// The driver: the guest component, its imports and the loop that runs it, on
// whichever thread the embedder chose (`McpBox.open`'s `thread` option).
//
// A WASI 0.2 component runs one export at a time, so, as in the wasmtime host's driver
// task, one owner runs it: callers queue jobs; the driver takes them, then calls the
// guest's `wait`, which polls every connection, the nearest deadline and the wake
// signal at once. Two hubs (hub.js) carry messages between the driver and the host's
// side (processes, pipes, sockets, callers: index.js, transport.js, wasi_http.js):
//
// - on the caller's thread (driver_main.js, the default), a turn of the guest runs from
//   the event loop whenever something arrives for it, and `poll` never blocks: when
//   nothing is ready it reports the wake signal, the contract's own way for a host to
//   get its turn back, and the next turn is scheduled for the nearest deadline. A call
//   crosses no thread;
// - on a worker thread (driver_worker.js), `poll` blocks on a doorbell the host side
//   rings after every message (channel.js), so the caller's event loop never runs guest
//   code.
//
// The imports the guest needs are in imports/, a file per WIT interface as in the
// wasmtime host's host/src/imports/ (imports/index.js has the table): thin proxies of
// the host side's, over the hub (hub.js). This file is the loop: instances, their jobs
// and turns, what they publish, and the audit trail's file (audit.js), written here as
// the guest's `audit` events come out.
//
// A guest that traps (anything escaping an export call) is replaced, as driver.rs
// does: the trapped instance's connections are closed (its servers stop), a fresh
// instance loads the same configuration with the same options and starts, and the
// calls that were in flight fail with "the guest failed and was restarted: <trap>".
// Three traps within a minute stop the runtime. The memory limit that makes a guest
// trap instead of growing without bound is in limits.js.

import { readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';

import { AuditLog, auditRecord, resolveAuditPath } from './audit.js';
import { guestImports } from './imports/index.js';
import { formatBytes, watchRealloc } from './limits.js';

/**
 * The longest the guest waits in one `wait` with nothing to do. Jobs ring the wake
 * signal, so this only bounds how long the driver sleeps between idle turns.
 */
const IDLE_WAIT_MS = 60_000n;

/** Whether `path` is a file. */
function isFile(path) {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** A guest that traps this many times within `TRAP_WINDOW_NS` is not restarted again (as driver.rs). */
const MAX_TRAPS = 3;
const TRAP_WINDOW_NS = 60_000_000_000n;

/** The payload of an error result thrown by a jco export (`ComponentError.payload`). */
function payloadOf(error) {
  if (error !== null && typeof error === 'object' && 'payload' in error) {
    return error.payload;
  }
  throw error;
}

/** A failed call's outcome, as the guest reports one. */
function runtimeError(message) {
  return { tag: 'err', val: { tag: 'runtime', val: message } };
}

/**
 * The guest trapped: thrown out of `Session.turn` with what it was doing, so the
 * driver can answer the job in hand and replace the instance.
 */
export class Trap {
  /**
   * @param {unknown} error what escaped the export call
   * @param {object | null} job the job being handled, unless already answered
   * @param {number} memoryBytes the guest's linear memory when it trapped
   * @param {number} memoryLimit its limit
   */
  constructor(error, job, memoryBytes, memoryLimit) {
    let text = error instanceof Error ? error.message : String(error);
    // A trap in `cabi_realloc` says itself when the limit caused it (limits.js); a
    // guest allocation elsewhere cannot be told apart from a panic, so give the numbers.
    if (!text.includes('memoryLimit') && memoryBytes >= memoryLimit * 0.75) {
      text +=
        ` (the guest's memory stood at ${formatBytes(memoryBytes)} of its limit of ${formatBytes(memoryLimit)}; ` +
        "McpBox.open's `memoryLimit` option raises it)";
    }
    this.text = text;
    this.job = job;
  }
}

/** Tools read from the guest per `tools` call (the WIT's `tools` is paged). */
const TOOLS_PAGE = 256;

/** Every tool in the registry, read a page at a time so the guest copies little at once. */
function allTools(registry) {
  const tools = [];
  for (;;) {
    const page = registry.tools(tools.length, TOOLS_PAGE);
    tools.push(...page);
    if (page.length < TOOLS_PAGE) {
      return tools;
    }
  }
}

/**
 * Every tool in `dialect` (`registry.adapted-tools`), a page at a time as `allTools`
 * reads them; throws the guest's error for an unknown dialect.
 */
function allAdaptedTools(registry, dialect) {
  const tools = [];
  const refused = [];
  for (let start = 0; ; ) {
    const page = registry.adaptedTools(dialect, start, TOOLS_PAGE);
    tools.push(...page.tools);
    refused.push(...page.refused);
    // A page covers TOOLS_PAGE tools of the registry, adapted or refused.
    const read = page.tools.length + page.refused.length;
    if (read < TOOLS_PAGE) {
      return { dialect, tools, refused };
    }
    start += read;
  }
}

/**
 * A driver: the guest's imports over `hub`, and `run`, which runs guest instances until
 * the runtime stops and then posts `stopped`.
 *
 * @param {Hub & {drain(): void, post(msg: object): void, request(msg: object): any, poll(list: object[]): Uint32Array}} hub
 * @param {object} options what `McpBox.open` passes (see index.js): `modules`, `glueUrl`,
 *   `origin`, `configText`, `cacheDir`, `inputRequests`, `sampling`, `urlElicitation`, `approvals`,
 *   `memoryLimit`, `results`, `embedder`, `roots`, `maxMessageBytes`
 * @returns {{run(serve: (session: object) => Promise<string>): Promise<void>}} `serve`
 *   runs turns of one session (`session.turn()`) until one returns why it stopped
 *   (resolves with it) or traps (rejects with the `Trap`)
 */
export function createDriver(hub, options) {
  const { modules, glueUrl, inputRequests, sampling, urlElicitation, approvals, memoryLimit, embedder } = options;
  /** The configuration a fresh instance loads: the one last applied (a reload changes it). */
  let { origin, configText } = options;
  /** The embedder's roots as last set (`null`: the configuration's), for a guest that replaces a trapped one. */
  let roots = options.roots ?? null;

  /** The guest's imports, one set for every instance of this runtime (imports/index.js). */
  const { imports, closeAll } = guestImports(hub, options);

  /** The audit trail's file, once the first instance has named it (kept across restarts). */
  let auditLog = null;

  /**
   * With `claudeSettings`, adds the permission rules of `.claude/settings.json` and
   * `.claude/settings.local.json` next to the configuration file (in the current directory
   * for configuration text) to the loaded configuration, as the wasmtime host does
   * (instance.rs). Returns their issues; throws the configuration error's message when a
   * file cannot be read.
   */
  function loadClaudeSettings(registry) {
    if (!embedder.claudeSettings) {
      return [];
    }
    const dir = isFile(origin) ? dirname(origin) : '';
    const files = ['settings.json', 'settings.local.json'].map((n) => join(dir, '.claude', n)).filter(isFile);
    if (files.length === 0) {
      return [
        {
          message: `no Claude Code settings were read: there is no .claude/settings.json (or settings.local.json) next to ${origin}`,
        },
      ];
    }
    const issues = [];
    for (const file of files) {
      let text;
      try {
        text = readFileSync(file, 'utf8');
      } catch (error) {
        throw { config: `${file}: the Claude Code settings cannot be read: ${error.message}` };
      }
      issues.push(...registry.loadClaudeSettings(file, text));
    }
    return issues;
  }

  /**
   * Opens the audit file the embedder or else the configuration names, unless one is open
   * already; throws the configuration error's message when it cannot be opened.
   */
  function openAuditLog(registry) {
    if (auditLog !== null) {
      return;
    }
    let path = embedder.auditFile;
    try {
      if (path === null) {
        const written = registry.auditFile();
        path = written === undefined ? null : resolveAuditPath(origin, written);
      }
      auditLog = path === null ? null : AuditLog.open(path);
    } catch (error) {
      throw { config: `${origin}: ${error.message}` };
    }
  }

  /**
   * Stamps each `audit` event with the wall-clock time and appends it to the audit file;
   * a write that fails adds a warning event. Returns the events to publish.
   */
  function stampAudits(events) {
    if (!events.some((e) => e.tag === 'audit')) {
      return events;
    }
    const out = [];
    for (const e of events) {
      if (e.tag !== 'audit') {
        out.push(e);
        continue;
      }
      const record = auditRecord(e.val, new Date().toISOString());
      out.push({ tag: 'audit', val: record });
      const failed = auditLog?.write(record) ?? null;
      if (failed !== null) {
        out.push({ tag: 'warning', val: failed });
      }
    }
    return out;
  }

  /** One guest instance, configured and started, and the calls it runs. */
  class Session {
    /** @private use `Session.start` */
    constructor(registry, memoryBytes) {
      this.registry = registry;
      this.memoryBytes = memoryBytes;
      /** Calls started in the guest: guest handle → caller's id, and back. */
      this.callers = new Map();
      this.handles = new Map();
    }

    /**
     * Instantiates the guest, loads the configuration, applies the options and starts
     * the servers. Returns the session and `loadConfig`'s issues, or throws the
     * configuration's error payload as `{ config }`.
     */
    static async start(instantiate) {
      const watch = watchRealloc(memoryLimit);
      const guest = await instantiate((name) => modules[name], imports, watch.instantiateCore);
      const registry = guest.registry;
      let issues;
      try {
        issues = registry.loadConfig(origin, configText);
      } catch (error) {
        throw { config: payloadOf(error) };
      }
      issues = [...issues, ...loadClaudeSettings(registry)];
      if (approvals) {
        registry.enableApprovals();
      }
      if (inputRequests) {
        registry.enableInputRequests();
      }
      if (sampling) {
        registry.enableSampling();
      }
      if (urlElicitation) {
        registry.enableUrlElicitation();
      }
      openAuditLog(registry);
      if (roots !== null) {
        try {
          registry.setRoots(roots);
        } catch (error) {
          throw { config: payloadOf(error) };
        }
      }
      registry.setOptions({
        maxResultBytes: embedder.maxResultBytes === null ? undefined : BigInt(embedder.maxResultBytes),
        inlineMedia: embedder.inlineMedia ?? undefined,
        audit: embedder.auditEvents || auditLog !== null,
        auditArguments: embedder.auditArguments ?? undefined,
      });
      registry.start();
      return { session: new Session(registry, watch.memoryBytes), issues };
    }

    /** Publishes a turn's finished calls and events (taken from the guest when not given). */
    publish(finished, { snapshots = false, events = this.registry.events(), refused = [] } = {}) {
      events = stampAudits(events);
      const changed = snapshots || events.some((e) => e.tag === 'status' || e.tag === 'tools-changed');
      const done = [...refused];
      for (const c of finished) {
        const id = this.callers.get(c.call);
        if (id !== undefined) {
          this.callers.delete(c.call);
          this.handles.delete(id);
          done.push({ id, outcome: c.outcome });
        }
      }
      if (events.length === 0 && done.length === 0 && !changed) {
        return;
      }
      // Snapshots travel with the events and finished calls that caused them, so a caller
      // whose call failed because its server died also sees that server failed.
      const update = { t: 'update', events, done };
      if (changed) {
        update.tools = allTools(this.registry);
        update.servers = this.registry.servers();
      }
      hub.post(update);
    }

    /**
     * One turn: takes the callers' jobs, then lets the guest `wait` for what its servers
     * sent, and publishes what came of it. Returns why the runtime stopped, once a job
     * shut it down; throws a `Trap` when the guest trapped.
     */
    turn() {
      let job = null;
      try {
        return this.#turn((j) => {
          job = j;
        });
      } catch (error) {
        throw new Trap(error, job, this.memoryBytes(), memoryLimit);
      }
    }

    #turn(handling) {
      const registry = this.registry;
      hub.drain();
      const refused = [];
      for (let job = hub.jobs.shift(); job !== undefined; job = hub.jobs.shift()) {
        handling(job);
        switch (job.kind) {
          case 'call': {
            const callOptions = { timeoutMs: job.timeoutMs === null ? undefined : BigInt(job.timeoutMs) };
            try {
              const handle =
                job.dialect === undefined
                  ? registry.startCall(job.tool, job.arguments, callOptions)
                  : registry.startAdaptedCall(job.dialect, job.tool, job.arguments, callOptions);
              this.callers.set(handle, job.id);
              this.handles.set(job.id, handle);
            } catch (error) {
              refused.push({ id: job.id, outcome: { tag: 'err', val: payloadOf(error) } });
            }
            break;
          }
          case 'request': {
            const callOptions = { timeoutMs: job.timeoutMs === null ? undefined : BigInt(job.timeoutMs) };
            try {
              if (typeof registry.startRequest !== 'function') {
                throw new Error('this guest component has no `start-request` (it was built from an older WIT)');
              }
              const handle = registry.startRequest(job.server ?? undefined, job.request, callOptions);
              this.callers.set(handle, job.id);
              this.handles.set(job.id, handle);
            } catch (error) {
              refused.push({ id: job.id, outcome: { tag: 'err', val: payloadOf(error) } });
            }
            break;
          }
          case 'adapted-tools': {
            let result = null;
            let error = null;
            try {
              if (typeof registry.adaptedTools !== 'function') {
                throw new Error('this guest component has no `adapted-tools` (it was built from an older WIT)');
              }
              result = allAdaptedTools(registry, job.dialect);
            } catch (e) {
              error = payloadOf(e);
            }
            hub.post({ t: 'adapted', id: job.id, result, error });
            break;
          }
          case 'cancel': {
            const handle = this.handles.get(job.id);
            if (handle !== undefined) {
              registry.cancel(handle);
            }
            break;
          }
          case 'reconnect': {
            let error = null;
            if (typeof registry.reconnect !== 'function') {
              error = 'this guest component has no `reconnect` (it was built from an older WIT)';
            } else {
              try {
                registry.reconnect(job.server);
              } catch (e) {
                error = payloadOf(e);
              }
            }
            // The snapshots first, so the caller sees the server starting once answered.
            this.publish([], { snapshots: true });
            hub.post({ t: 'reconnected', id: job.id, error });
            break;
          }
          case 'reload': {
            let report = null;
            let error = null;
            if (typeof registry.reloadConfig !== 'function') {
              error = 'this guest component has no `reload-config` (it was built from an older WIT)';
            } else {
              try {
                report = registry.reloadConfig(job.origin, job.text);
                // A guest replaced after a trap loads what is running now.
                origin = job.origin;
                configText = job.text;
              } catch (e) {
                error = payloadOf(e);
              }
            }
            // The stopped and started servers' statuses first, as driver.rs does.
            this.publish([], { snapshots: report !== null });
            hub.post({ t: 'reloaded', id: job.id, report, error });
            break;
          }
          case 'roots': {
            let error = null;
            try {
              registry.setRoots(job.roots ?? undefined);
              roots = job.roots;
            } catch (e) {
              error = payloadOf(e);
            }
            // A server reconnected to be offered roots shows as starting.
            this.publish([], { snapshots: true });
            hub.post({ t: 'roots-set', id: job.id, error });
            break;
          }
          case 'answer': {
            let error = null;
            try {
              registry.answerInput(BigInt(job.input), job.answer);
            } catch (e) {
              error = payloadOf(e);
            }
            // The retry or response it caused is on its way; events follow from `wait`.
            this.publish([]);
            hub.post({ t: 'answered', id: job.id, error });
            break;
          }
          case 'shutdown': {
            try {
              registry.shutdown();
              const turn = registry.wait(0n);
              this.publish(turn.finished, { snapshots: true, events: turn.events });
            } catch {
              // Shutting down anyway: the main thread stops every server once this
              // thread has said it stopped.
            }
            return 'it was shut down';
          }
          default:
            throw new Error(`mcpbox driver: unknown job ${JSON.stringify(job.kind)}`);
        }
        handling(null);
      }
      if (refused.length > 0) {
        // With their audit records: out (and in the audit file) before the callers hear.
        this.publish([], { refused });
      }
      const turn = registry.wait(IDLE_WAIT_MS);
      this.publish(turn.finished, { events: turn.events });
      return undefined;
    }

    /**
     * The outcomes that fail every call in flight, and the call in hand, with `message`:
     * the guest that held them is gone.
     */
    failures(job, message) {
      const done = [...this.handles.keys()].map((id) => ({ id, outcome: runtimeError(message) }));
      this.callers.clear();
      this.handles.clear();
      if (job?.kind === 'call' && !done.some((d) => d.id === job.id)) {
        done.push({ id: job.id, outcome: runtimeError(message) });
      }
      return done;
    }
  }

  /** Answers a reconnect, input answer or reload that was in hand when the guest trapped. */
  function refuseJob(job, message) {
    if (job?.kind === 'reconnect') {
      hub.post({ t: 'reconnected', id: job.id, error: message });
    } else if (job?.kind === 'roots') {
      hub.post({ t: 'roots-set', id: job.id, error: message });
    } else if (job?.kind === 'answer') {
      hub.post({ t: 'answered', id: job.id, error: message });
    } else if (job?.kind === 'adapted-tools') {
      hub.post({ t: 'adapted', id: job.id, result: null, error: message });
    } else if (job?.kind === 'reload') {
      hub.post({ t: 'reloaded', id: job.id, report: null, error: message });
    }
  }

  /**
   * Runs guest instances until shut down. A guest that traps is replaced by a fresh
   * instance (its servers restart), as in driver.rs; only a guest that keeps trapping
   * stops the runtime. Returns why the runtime stopped.
   */
  async function runSessions(serve) {
    const { instantiate } = await import(glueUrl);
    let started;
    try {
      started = await Session.start(instantiate);
    } catch (error) {
      if (error?.config !== undefined) {
        hub.post({ t: 'loaded', error: error.config });
        return 'the configuration could not be loaded';
      }
      throw error;
    }
    let session = started.session;
    hub.post({ t: 'loaded', issues: started.issues, servers: session.registry.servers(), tools: allTools(session.registry) });

    /** When the guest trapped lately (monotonic nanoseconds). */
    let traps = [];
    for (;;) {
      let trap;
      try {
        return await serve(session);
      } catch (error) {
        if (!(error instanceof Trap)) {
          throw error;
        }
        trap = error;
      }
      // The dead instance's servers stop first: the new one starts its own.
      closeAll();
      const now = process.hrtime.bigint();
      traps = traps.filter((t) => now - t < TRAP_WINDOW_NS);
      traps.push(now);
      if (traps.length >= MAX_TRAPS) {
        // The calls in flight fail with this reason when the host side hears of it.
        // (driver.rs tells them "restarted" even then.)
        return `the guest failed ${MAX_TRAPS} times within a minute; last: ${trap.text}`;
      }
      const why = `the guest failed and was restarted: ${trap.text}`;
      const failed = session;
      try {
        ({ session } = await Session.start(instantiate));
      } catch (error) {
        const cause = error?.config ?? (error instanceof Error ? error.message : String(error));
        closeAll();
        return `the guest failed (${trap.text}) and could not be restarted: ${cause}`;
      }
      // The calls in flight fail with the new instance's snapshots and the warning (as
      // driver.rs publishes them: snapshots first), so a caller that then waits for
      // readiness waits for the new instance's servers.
      hub.post({
        t: 'update',
        events: [{ tag: 'warning', val: why }],
        done: failed.failures(trap.job, why),
        servers: session.registry.servers(),
        tools: allTools(session.registry),
      });
      refuseJob(trap.job, why);
    }
  }

  return {
    /** Runs the runtime until it stops, then closes what is left and posts `stopped`. */
    async run(serve) {
      let reason;
      try {
        reason = await runSessions(serve);
      } catch (error) {
        reason = `the guest failed: ${error instanceof Error ? error.message : String(error)}`;
      }
      closeAll();
      try {
        auditLog?.close();
      } catch {
        // Every line was written when it came; closing can only lose nothing.
      }
      hub.post({ t: 'stopped', reason });
    },
  };
}

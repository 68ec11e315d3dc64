// The driver: the guest component, its imports and the loop that runs it, on
// whichever thread the embedder chose (`McpBox.open`'s `thread` option).
//
// A WASI 0.2 component runs one export at a time, so, as in the wasmtime host's driver
// task, one owner runs it: callers queue jobs; a turn hands them to the guest's
// `turns.step` with what every server sent since the last turn, writes the lines the
// step returns and publishes its finished calls and events; the next turn comes when
// something arrives or at the step's deadline. A sequential call enters the guest twice
// (the step that sends it, the step that takes its answer) and crosses back into the
// host for nothing. While the guest waits on a remote server (the step says
// `blocking`), the next step has a timeout, in which it polls as `registry.wait` does:
// every connection, the nearest deadline and the wake signal at once. Work that has no
// step job (a reconnect, a reload, roots, adapted tools, shutdown) calls `registry`
// between steps. Two hubs (hub.js) carry messages between the driver and the host's
// side (processes, pipes, sockets, callers: index.js, transport.js, wasi_http.js):
//
// - on the caller's thread (driver_main.js, the default), a turn of the guest runs from
//   the event loop whenever something arrives for it, and `poll` never blocks: when
//   nothing is ready it reports the wake signal, the contract's own way for a host to
//   get its turn back, and the next turn is scheduled for the nearest deadline. A call
//   crosses no thread;
// - on a worker thread (driver_worker.js), the thread sleeps between turns, and `poll`
//   blocks, on a doorbell the host side rings after every message (channel.js), so the
//   caller's event loop never runs guest code.
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
 * The longest the guest waits in one step that may block (while it waits on remote
 * servers) with nothing to do. Jobs ring the wake signal, so this only bounds how long
 * the driver sleeps between idle turns.
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
   * @param {object[]} jobs the jobs being handled, unless already answered
   * @param {number} memoryBytes the guest's linear memory when it trapped
   * @param {number} memoryLimit its limit
   */
  constructor(error, jobs, memoryBytes, memoryLimit) {
    let text = error instanceof Error ? error.message : String(error);
    // A trap in `cabi_realloc` says itself when the limit caused it (limits.js); a
    // guest allocation elsewhere cannot be told apart from a panic, so give the numbers.
    if (!text.includes('memoryLimit') && memoryBytes >= memoryLimit * 0.75) {
      text +=
        ` (the guest's memory stood at ${formatBytes(memoryBytes)} of its limit of ${formatBytes(memoryLimit)}; ` +
        "McpBox.open's `memoryLimit` option raises it)";
    }
    this.text = text;
    this.jobs = jobs;
  }
}

/**
 * A caller's job as a `turns.step` job, or null for a job the driver does with
 * `registry`'s exports between steps (and a cancel of a call with no handle yet).
 *
 * @param {object} job
 * @param {Map<number, bigint>} handles the guest's handles of the calls in flight
 */
function toStepJob(job, handles) {
  switch (job.kind) {
    case 'call':
      return {
        tag: 'call',
        val: { tool: job.tool, dialect: job.dialect, arguments: job.arguments, options: callOptions(job) },
      };
    case 'request':
      return { tag: 'request', val: { server: job.server ?? undefined, request: job.request, options: callOptions(job) } };
    case 'cancel': {
      const handle = handles.get(job.id);
      return handle === undefined ? null : { tag: 'cancel', val: handle };
    }
    case 'answer':
      return { tag: 'answer-input', val: { id: BigInt(job.input), answer: job.answer } };
    default:
      return null;
  }
}

/** A call's or request's `call-options`. */
function callOptions(job) {
  return { timeoutMs: job.timeoutMs === null ? undefined : BigInt(job.timeoutMs), task: job.task === true };
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

  /** An export interface of the guest whose every call counts as a crossing (`hub.crossings`). */
  function counted(exports) {
    const out = {};
    for (const [name, f] of Object.entries(exports)) {
      out[name] =
        typeof f === 'function'
          ? (...args) => {
              hub.crossings += 1;
              return f(...args);
            }
          : f;
    }
    return out;
  }

  /** One guest instance, configured and started, and the calls it runs. */
  class Session {
    /** @private use `Session.start` */
    constructor(registry, turns, memoryBytes) {
      this.registry = registry;
      /** The `turns` export: every turn is a `step`. */
      this.turns = turns;
      /** The last step said the guest waits on pollables of its own (remote servers). */
      this.blocking = false;
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
      const registry = counted(guest.registry);
      if (typeof guest.turns?.step !== 'function') {
        throw new Error('this guest component has no `turns.step` (it was built from an older WIT)');
      }
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
      return { session: new Session(registry, counted(guest.turns), watch.memoryBytes), issues };
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
      const update = { t: 'update', events, done, crossings: hub.crossings };
      if (changed) {
        update.tools = allTools(this.registry);
        update.servers = this.registry.servers();
      }
      hub.post(update);
    }

    /**
     * One turn: hands the callers' jobs and what the servers sent to the guest's
     * `turns.step`, writes what it returns and publishes what came of it. Returns why the
     * runtime stopped, once a job shut it down; otherwise when the next turn is due:
     * `deadline` (monotonic nanoseconds, or null), `again` when it is due at once, and
     * `polled` when the guest waited itself (so a hub on the caller's thread knows what
     * its `poll` noted). Throws a `Trap` when the guest trapped.
     */
    turn() {
      let jobs = [];
      try {
        return this.#turn((j) => {
          jobs = j;
        });
      } catch (error) {
        throw new Trap(error, jobs, this.memoryBytes(), memoryLimit);
      }
    }

    #turn(handling) {
      const registry = this.registry;
      hub.drain();
      hub.fresh = false;
      /** Jobs for the next step, in order, with the callers' jobs they came from. */
      let batch = [];
      const step = (timeoutMs) => {
        const jobs = batch;
        batch = [];
        handling(jobs.map((b) => b.job));
        const out = this.#step(jobs, timeoutMs);
        handling([]);
        return out;
      };
      for (let job = hub.jobs.shift(); job !== undefined; job = hub.jobs.shift()) {
        const stepped = toStepJob(job, this.handles);
        if (stepped !== null) {
          batch.push({ job, stepped });
          continue;
        }
        if (job.kind === 'cancel') {
          // Of a call in this batch, or of a call that already ended: the first needs
          // the batch's step for its handle.
          if (batch.some((b) => b.job.id === job.id)) {
            step(0n);
            hub.jobs.unshift(job);
          }
          continue;
        }
        // The jobs before it come first.
        if (batch.length > 0) {
          step(0n);
        }
        handling([job]);
        switch (job.kind) {
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
        handling([]);
      }
      // While the guest waits on its own pollables (remote servers) its step gets a
      // timeout, in which it polls them as `registry.wait` does; otherwise this host waits
      // for the next turn. A step that did not poll and left the guest waiting is followed
      // by one that does at once: what the guest waits for may have come already (an
      // answer's body, with its head), and nothing else would start a turn for it.
      const polled = this.blocking;
      const out = step(polled ? IDLE_WAIT_MS : 0n);
      this.blocking = out.blocking;
      return { deadline: out.deadline ?? null, again: hub.unread() || (out.blocking && !polled), polled };
    }

    /**
     * One `turns.step`: `batch`'s jobs and what every connection received in, the lines
     * to write out (posted at once), the turn published, the outcomes of the jobs
     * answered. Returns the step's output.
     */
    #step(batch, timeoutMs) {
      const out = this.turns.step({
        now: process.hrtime.bigint(),
        jobs: batch.map((b) => b.stepped),
        arrived: hub.arrivals(),
        timeoutMs,
      });
      for (const { connection, messages } of out.outgoing) {
        const conn = Number(connection);
        for (const message of messages) {
          hub.post({ t: 'send', conn, message });
        }
      }
      const refused = [];
      const answered = [];
      batch.forEach(({ job }, i) => {
        const outcome = out.jobs[i];
        if (outcome.tag === 'started') {
          if (outcome.val.tag === 'ok') {
            this.callers.set(outcome.val.val, job.id);
            this.handles.set(job.id, outcome.val.val);
          } else {
            refused.push({ id: job.id, outcome: { tag: 'err', val: outcome.val.val } });
          }
        } else if (outcome.tag === 'answered') {
          answered.push({ t: 'answered', id: job.id, error: outcome.val.tag === 'err' ? outcome.val.val : null });
        }
      });
      // The refused calls' audit records go out (and into the audit file) with them.
      this.publish(out.turn.finished, { events: out.turn.events, refused });
      for (const msg of answered) {
        hub.post(msg);
      }
      return out;
    }

    /**
     * The outcomes that fail every call in flight, and the calls in hand, with
     * `message`: the guest that held them is gone.
     */
    failures(jobs, message) {
      const done = [...this.handles.keys()].map((id) => ({ id, outcome: runtimeError(message) }));
      this.callers.clear();
      this.handles.clear();
      for (const job of jobs) {
        if ((job.kind === 'call' || job.kind === 'request') && !done.some((d) => d.id === job.id)) {
          done.push({ id: job.id, outcome: runtimeError(message) });
        }
      }
      return done;
    }
  }

  /** Answers the reconnects, input answers and reloads in hand when the guest trapped. */
  function refuseJobs(jobs, message) {
    for (const job of jobs) {
      if (job.kind === 'reconnect') {
        hub.post({ t: 'reconnected', id: job.id, error: message });
      } else if (job.kind === 'roots') {
        hub.post({ t: 'roots-set', id: job.id, error: message });
      } else if (job.kind === 'answer') {
        hub.post({ t: 'answered', id: job.id, error: message });
      } else if (job.kind === 'adapted-tools') {
        hub.post({ t: 'adapted', id: job.id, result: null, error: message });
      } else if (job.kind === 'reload') {
        hub.post({ t: 'reloaded', id: job.id, report: null, error: message });
      }
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
        crossings: hub.crossings,
        events: [{ tag: 'warning', val: why }],
        done: failed.failures(trap.jobs, why),
        servers: session.registry.servers(),
        tools: allTools(session.registry),
      });
      refuseJobs(trap.jobs, why);
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

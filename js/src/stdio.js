// Local servers as child processes speaking newline-delimited JSON on stdio.
//
// Each server runs in its own process group (`detached: true`) so that it and
// everything it spawned can be stopped together: on close the group gets SIGTERM, then
// SIGKILL after a grace period; when the server exits by itself the rest of its group
// is killed too, and Node reaps every child. stdout is framed with a size cap; lines
// that are not JSON are skipped and counted; stderr is kept as a short tail for error
// messages. The rules and messages are those of host/src/transport/stdio.rs, so the
// guest sees the same connection whichever host runs it.

import { spawn } from 'node:child_process';
import { accessSync, constants as fsConstants, statSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { resolve as resolvePath } from 'node:path';
import { getSystemErrorMap } from 'node:util';

import { LineSplitter, classify } from './framing.js';

/** How many stderr lines are kept for diagnostics. */
const STDERR_LINES = 20;
/** Longest stderr line kept, in bytes. */
const STDERR_LINE_CAP = 2048;
/** Time between SIGTERM and SIGKILL when a server is stopped. */
const GRACE_MS = 2000;
/** How long to wait for an exit status after a server closes its stdout. */
const EXIT_AFTER_EOF_MS = 500;
/**
 * Items read ahead of the guest; beyond this stdout is paused until the guest has
 * taken them, so the server blocks on its stdout, which bounds memory under a flood.
 */
export const INBOUND_QUEUE = 1024;

/** Process groups still alive, killed if the process exits without closing them. */
const liveGroups = new Set();
let exitHookInstalled = false;

function installExitHook() {
  if (exitHookInstalled) {
    return;
  }
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const pgid of liveGroups) {
      killGroup(pgid, 'SIGKILL');
    }
  });
}

function killGroup(pgid, signal) {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: the group is already gone.
  }
}

/**
 * A Node system error in the words Rust's `io::Error` uses ("No such file or directory
 * (os error 2)"), so spawn failures read the same in both hosts.
 */
export function describeSystemError(error) {
  if (typeof error.errno === 'number') {
    const known = getSystemErrorMap().get(error.errno);
    if (known) {
      const text = known[1];
      return `${text.charAt(0).toUpperCase()}${text.slice(1)} (os error ${-error.errno})`;
    }
  }
  return error.message;
}

/**
 * Why the exec of `spec` failed, as the errno `execvp` meets (the one Node reports a tick
 * later): the working directory, then each candidate file (the command itself when it
 * names a path, else the command in each `PATH` directory of the child's environment).
 * Like `execvp`, a candidate that exists but cannot be run (EACCES) wins over the ones
 * that do not exist. Checked against Node's own errors in test/stdio.test.js.
 */
export function spawnFailure(spec) {
  const cwd = spec.cwd ?? process.cwd();
  try {
    if (!statSync(cwd).isDirectory()) {
      return { errno: -osConstants.errno.ENOTDIR };
    }
  } catch (error) {
    return error;
  }
  const command = spec.command;
  const dirs = command.includes('/') ? [''] : (spec.env.PATH ?? process.env.PATH ?? '/usr/bin:/bin').split(':');
  let found = null;
  for (const dir of dirs) {
    const file = resolvePath(cwd, dir, command);
    try {
      accessSync(file, fsConstants.X_OK);
      if (statSync(file).isDirectory()) {
        found ??= { errno: -osConstants.errno.EACCES };
      }
    } catch (error) {
      if (error.code !== 'ENOENT' && error.code !== 'ENOTDIR') {
        found ??= error;
      }
    }
  }
  return found ?? { errno: -osConstants.errno.ENOENT };
}

/** How a process ended, as Rust's host words it: "exit code 3", "signal 9". */
function describeExit(code, signal) {
  if (code !== null) {
    return `exit code ${code}`;
  }
  const number = osConstants.signals[signal];
  return number === undefined ? `signal ${signal}` : `signal ${number}`;
}

/**
 * One running stdio server.
 *
 * Items for the guest are delivered through `onItems(items, paused)` in arrival order,
 * each `{ message: string }`, `{ tooLarge: { size, cap, head, tail } }` or, always last,
 * `{ closed: reason }`. When `INBOUND_QUEUE` items are not yet taken, reading stops and
 * `paused` is true; `taken(count)` reports what the guest took and resumes reading.
 */
export class StdioServer {
  /**
   * Starts the server. Synchronous, so that a driver on the caller's thread can answer
   * the guest's `open` inside the import call.
   *
   * @param {{command: string, args: string[], env: Record<string, string>, cwd?: string}} spec
   * @param {{maxMessageBytes: number, onItems: (items: object[], paused: boolean) => void}} options
   * @returns {StdioServer} throws `{ tag: 'unreachable', val }` when the process cannot
   *   be started
   */
  static start(spec, { maxMessageBytes, onItems }) {
    installExitHook();
    const place = spec.cwd === undefined ? '' : ` in ${spec.cwd}`;
    const unreachable = (detail) => ({
      tag: 'unreachable',
      val: `could not start \`${spec.command}\`${place}: ${detail}`,
    });
    let child;
    try {
      child = spawn(spec.command, spec.args, {
        env: spec.env,
        cwd: spec.cwd,
        stdio: ['pipe', 'pipe', 'pipe'],
        detached: true,
        windowsHide: true,
      });
    } catch (error) {
      throw unreachable(describeSystemError(error));
    }
    if (child.pid === undefined) {
      // libuv learns whether the exec failed before `spawn` returns, but Node hands
      // over its errno only on the next tick (as an 'error' event).
      child.once('error', () => {});
      throw unreachable(describeSystemError(spawnFailure(spec)));
    }
    return new StdioServer(child, maxMessageBytes, onItems);
  }

  /** @private use `StdioServer.start` */
  constructor(child, maxMessageBytes, onItems) {
    this.child = child;
    this.pgid = child.pid;
    this.maxMessageBytes = maxMessageBytes;
    this.onItems = onItems;
    this.stderrTail = [];
    this.skippedLines = 0;
    this.oversizedMessages = 0;
    /** @type {string | null} */
    this.exitStatus = null;
    this.stopping = false;
    this.closedSent = false;
    /** Items delivered, and how many of them the guest has taken. */
    this.delivered = 0;
    this.takenByGuest = 0;
    this.paused = false;
    liveGroups.add(this.pgid);

    // Errors on the pipes (EPIPE after the server died) show up as its exit instead.
    child.on('error', () => {});
    child.stdin.on('error', () => {});
    child.stderr.on('error', () => {});

    /** Resolves once the process has exited and its group was cleared. */
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        // The leader is gone; anything it left behind in its group goes with it.
        killGroup(this.pgid, 'SIGKILL');
        liveGroups.delete(this.pgid);
        clearTimeout(this.killTimer);
        this.exitStatus = describeExit(code, signal);
        resolve();
      });
    });

    this.#readStdout();
    this.#readStderr();
  }

  /** Writes one message, newline-terminated. Never blocks on the server. */
  send(message) {
    if (!this.child.stdin.destroyed && !this.child.stdin.writableEnded) {
      this.child.stdin.write(`${message}\n`);
    }
  }

  /**
   * Stops the server: closes its stdin (which tells a well-behaved server to exit),
   * sends SIGTERM to its group and SIGKILL after the grace period.
   */
  close() {
    this.closedSent = true;
    this.child.stdin.end();
    this.#stop();
  }

  /** The transport's health, in the shape of the WIT `diagnostics` record. */
  diagnostics() {
    return {
      stderrTail: [...this.stderrTail],
      skippedLines: BigInt(this.skippedLines),
      oversizedMessages: BigInt(this.oversizedMessages),
      exitStatus: this.exitStatus ?? undefined,
    };
  }

  #stop() {
    if (this.stopping || this.exitStatus !== null) {
      return;
    }
    this.stopping = true;
    killGroup(this.pgid, 'SIGTERM');
    this.killTimer = setTimeout(() => killGroup(this.pgid, 'SIGKILL'), GRACE_MS);
  }

  /** The guest has taken `count` items in all: read on if it has caught up enough. */
  taken(count) {
    this.takenByGuest = count;
    if (this.paused && this.delivered - this.takenByGuest < INBOUND_QUEUE) {
      this.paused = false;
      this.child.stdout.resume();
    }
  }

  #deliver(items) {
    if (items.length === 0 || this.closedSent) {
      return;
    }
    this.delivered += items.length;
    if (!this.paused && this.delivered - this.takenByGuest >= INBOUND_QUEUE) {
      this.paused = true;
      this.child.stdout.pause();
    }
    this.onItems(items, this.paused);
  }

  #pushStderr(line) {
    if (this.stderrTail.length === STDERR_LINES) {
      this.stderrTail.shift();
    }
    this.stderrTail.push(line);
  }

  #readStdout() {
    const splitter = new LineSplitter(this.maxMessageBytes);
    const stdout = this.child.stdout;
    let readError = null;
    const frames = (list) => {
      const items = [];
      for (const frame of list) {
        if (frame.oversized) {
          this.oversizedMessages += 1;
          items.push({
            tooLarge: {
              size: BigInt(frame.oversized.size),
              cap: BigInt(this.maxMessageBytes),
              head: frame.oversized.head,
              tail: frame.oversized.tail,
            },
          });
          continue;
        }
        const kind = classify(frame.line);
        if (kind.message !== undefined) {
          items.push({ message: kind.message });
        } else if (kind.notJson !== undefined) {
          this.skippedLines += 1;
          this.#pushStderr(`(stdout, skipped) ${kind.notJson}`);
        }
      }
      return items;
    };
    stdout.on('data', (chunk) => this.#deliver(frames(splitter.push(chunk))));
    stdout.on('error', (error) => {
      readError = error;
    });
    stdout.once('close', async () => {
      this.#deliver(frames(splitter.end()));
      let timer;
      const exitedInTime = await Promise.race([
        this.exited.then(() => true),
        new Promise((resolve) => {
          timer = setTimeout(() => resolve(false), EXIT_AFTER_EOF_MS);
        }),
      ]);
      clearTimeout(timer);
      // The guest words its message as "server `name` <reason>".
      let reason;
      if (exitedInTime) {
        reason = `exited (${this.exitStatus})`;
      } else {
        this.#stop();
        const how = readError === null ? 'closed its stdout' : `failed to be read from (${readError.message})`;
        await this.exited;
        reason = `${how} while still running, so it was stopped`;
      }
      this.#deliver([{ closed: reason }]);
    });
  }

  #readStderr() {
    const splitter = new LineSplitter(STDERR_LINE_CAP);
    const keep = (list) => {
      for (const frame of list) {
        const line = frame.oversized
          ? `[a stderr line of ${frame.oversized.size} bytes, not kept]`
          : frame.line.toString('utf8');
        if (line.trim() !== '') {
          this.#pushStderr(line);
        }
      }
    };
    this.child.stderr.on('data', (chunk) => keep(splitter.push(chunk)));
    this.child.stderr.once('end', () => keep(splitter.end()));
  }
}

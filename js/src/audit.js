// The audit trail's file: one JSON line per call, as the guest reports it in `audit`
// events, stamped with the wall-clock time the host received it.
//
// A port of host/src/audit.rs: the same file resolution, line format and messages. The
// guest decides what a record holds (never a value from the environment or a header;
// arguments only when asked); the host adds the time and appends the line. The file is
// opened for appending, created if missing, when the runtime opens, so a path that
// cannot be written fails `McpBox.open` rather than the trail silently missing.
// Synchronous file access: the driver writes each line as the guest's turn returns its
// `audit` events, before the callers hear of the calls, on the driver's thread (the
// caller's by default, a worker with `thread: 'worker'`).

import { closeSync, openSync, statSync, writeSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';

import { makeDirs } from './blobs.js';
import { resolve } from './endpoint.js';

/**
 * The configuration's `audit.file` (a `Template` the guest split) as a path: `${VAR}` resolved from the environment, a
 * relative path taken from the configuration file's directory (when `origin` names a
 * file). Throws an `EndpointError` naming `audit.file` for an unset variable.
 *
 * @param {string} origin
 * @param {import('./endpoint.js').Template} written
 * @returns {string}
 */
export function resolveAuditPath(origin, written) {
  const path = resolve(written, 'audit.file', (name) => process.env[name]);
  if (isAbsolute(path)) {
    return path;
  }
  let isFile = false;
  try {
    isFile = statSync(origin).isFile();
  } catch {
    // Not a file (inline configuration text): the path stays relative to the process.
  }
  return isFile ? join(dirname(origin), path) : path;
}

/**
 * A WIT `audit-record` as a line of the audit file (the same keys, in the same order, as
 * the wasmtime host's `AuditRecord`): absent optional fields `null`, except `profile`,
 * `approval` and `arguments`, which are left out.
 *
 * @param {object} r the record, as jco hands it over
 * @param {string} time RFC 3339, UTC, milliseconds
 */
export function auditRecord(r, time) {
  const record = {
    time,
    call: r.call === undefined ? null : Number(r.call),
    server: r.server,
    tool: r.tool,
  };
  if (r.profile !== undefined) {
    record.profile = r.profile;
  }
  record.decision = r.decision ?? null;
  record.rule = r.rule ?? null;
  if (r.approval !== undefined) {
    record.approval = r.approval;
  }
  record.outcome = r.outcome;
  record.durationMs = Number(r.durationMs);
  if (r.arguments !== undefined) {
    try {
      record.arguments = JSON.parse(r.arguments);
    } catch {
      // Refused before it was checked: kept as the caller gave it.
      record.arguments = r.arguments;
    }
  }
  return record;
}

/** An open audit trail. */
export class AuditLog {
  /** @private use `AuditLog.open` */
  constructor(path, fd) {
    this.path = path;
    this.fd = fd;
  }

  /**
   * Opens (or creates) `path` for appending; throws an `Error` whose message names it.
   *
   * @param {string} path
   */
  static open(path) {
    const dir = dirname(path);
    try {
      makeDirs(dir);
    } catch (error) {
      throw new Error(`the audit file's directory ${dir} cannot be created: ${error.message}`, {
        cause: error,
      });
    }
    try {
      return new AuditLog(path, openSync(path, 'a'));
    } catch (error) {
      throw new Error(`the audit file ${path} cannot be opened: ${error.message}`, { cause: error });
    }
  }

  /**
   * Appends one record as a line (one write, so runtimes appending to one file do not
   * interleave within a line). Returns the error message, naming the file, or null.
   */
  write(record) {
    try {
      writeSync(this.fd, `${JSON.stringify(record)}\n`);
      return null;
    } catch (error) {
      return `writing the audit file ${this.path} failed: ${error.message}`;
    }
  }

  close() {
    closeSync(this.fd);
  }
}

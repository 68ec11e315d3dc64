// `mcpbox:runtime/blobs`: files the host writes for the guest — tool results too large
// to pass on whole, and the images and audio in results (the configuration's `output`).
//
// A port of host/src/imports/blobs.rs, with the same directory, names, limits and
// messages: one directory per runtime, made on the first write (by default
// `results/<unix seconds>-<pid>` in the cache directory, else in the system's temporary
// directory; the `resultsDir` option chooses another, or `null`: then every write is
// `denied` and the guest passes on what it can). Each file is named after the guest's
// suggestion, made safe, with a number in front so that names never collide; one file
// is at most the policy's message cap, all of a runtime's files together at most
// `maxResultFilesBytes`. Synchronous file access: this runs inside the guest's import
// call, which must return its answer before the guest goes on (on the caller's thread by
// default, on the driver's worker with `thread: 'worker'`).

import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** The default cap on all of a runtime's result files, as `Policy::max_result_files_bytes`. */
export const DEFAULT_MAX_RESULT_FILES_BYTES = 1024 * 1024 * 1024;

/**
 * The default result directory: `results/<unix seconds>-<pid>` under the cache directory,
 * or under the system's temporary directory when there is none.
 *
 * @param {string | null} cacheDir
 * @returns {string}
 */
export function defaultResultsDir(cacheDir) {
  const secs = Math.floor(Date.now() / 1000);
  return join(cacheDir ?? join(tmpdir(), 'mcpbox'), 'results', `${secs}-${process.pid}`);
}

/**
 * `mkdir -p`. Not `mkdirSync(dir, { recursive: true })`: on Node 20 that never returns
 * for a directory that cannot be made under /proc (it retries ENOENT forever), and an
 * embedder may name any path.
 *
 * @param {string} dir
 */
export function makeDirs(dir) {
  try {
    if (statSync(dir).isDirectory()) {
      return;
    }
  } catch (error) {
    if (error.code !== 'ENOENT') {
      throw error;
    }
  }
  const parent = dirname(dir);
  if (parent !== dir) {
    makeDirs(parent);
  }
  try {
    mkdirSync(dir);
  } catch (error) {
    if (error.code !== 'EEXIST') {
      throw error;
    }
  }
}

/**
 * `{server}-{name}` with every character outside `[A-Za-z0-9._-]` made `_`, at most 120
 * characters (the end kept: it holds the extension), never starting with a dot.
 */
export function safeName(server, name) {
  const joined = name.startsWith('mcp__') ? name : `${server}-${name}`;
  let safe = joined.replace(/[^A-Za-z0-9._-]/g, '_');
  if (safe.length > 120) {
    safe = safe.slice(safe.length - 120);
  }
  return safe.replace(/^\.+/, '');
}

/** The result directory of one runtime and what it holds. */
export class Results {
  #files = 0;
  #bytes = 0;
  #created = false;

  /**
   * @param {string | null} dir where files go; `null` keeps none
   * @param {number} maxFile the largest file, in bytes
   * @param {number} maxTotal all files together, in bytes
   */
  constructor(dir, maxFile, maxTotal) {
    this.dir = dir;
    this.maxFile = maxFile;
    this.maxTotal = maxTotal;
  }

  /**
   * Writes one file.
   *
   * @param {string} server the configured server name
   * @param {string} name the guest's suggested file name
   * @param {Uint8Array} data
   * @returns {{ok: {uri: string, size: bigint}} | {err: {tag: string, val: string | bigint}}}
   */
  write(server, name, data) {
    if (this.dir === null) {
      return { err: { tag: 'denied', val: 'no result directory is configured (the resultsDir option)' } };
    }
    const size = data.length;
    if (size > this.maxFile) {
      return { err: { tag: 'too-large', val: BigInt(this.maxFile) } };
    }
    if (this.#bytes + size > this.maxTotal) {
      return {
        err: {
          tag: 'denied',
          val: `this runtime's result files reached their limit of ${this.maxTotal} bytes (the maxResultFilesBytes option)`,
        },
      };
    }
    const io = (what, error) => ({ err: { tag: 'io', val: `${what} ${this.dir}: ${error.message}` } });
    if (!this.#created) {
      try {
        makeDirs(this.dir);
      } catch (error) {
        return io('could not create', error);
      }
      this.#created = true;
    }
    const path = join(this.dir, `${String(this.#files + 1).padStart(4, '0')}-${safeName(server, name)}`);
    try {
      writeFileSync(path, data, { flag: 'wx' });
    } catch (error) {
      return io('could not write a file in', error);
    }
    this.#files += 1;
    this.#bytes += size;
    return { ok: { uri: pathToFileURL(path).href, size: BigInt(size) } };
  }
}

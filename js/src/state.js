// `mcpbox:runtime/state`: what the guest remembers across runs (today the MCP era each
// server speaks, so a legacy server is not probed with `server/discover` on every start).
//
// The same store as the wasmtime host's (host/src/imports/state.rs), so both hosts share what
// they learnt: one small JSON file, `state.json`, in the cache directory
// (`defaultCacheDir`, as host/src/engine.rs `default_cache_dir` finds it), an object of
// text keys and values in byte order, pretty-printed, written through a temporary file
// and a rename. It is a cache in every sense: a missing, unreadable or concurrently
// rewritten file only costs the guest a probe, so errors are ignored, and the store is
// bounded. Synchronous file access: this runs inside the guest's import call, which must
// return its answer before the guest goes on (on the caller's thread by default, on the
// driver's worker with `thread: 'worker'`).

import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The file in the cache directory. */
export const STATE_FILE = 'state.json';
/** Entries beyond this many are not kept. */
const MAX_ENTRIES = 4096;
/** Longest key or value kept, in bytes. */
const MAX_TEXT = 1024;

/**
 * `$MCPBOX_CACHE_DIR`, else `$XDG_CACHE_HOME/mcpbox`, else `$HOME/.cache/mcpbox` (empty
 * values count as unset); null when none is set.
 *
 * @param {Record<string, string | undefined>} [env]
 * @returns {string | null}
 */
export function defaultCacheDir(env = process.env) {
  const v = (name) => (env[name] ? env[name] : null);
  if (v('MCPBOX_CACHE_DIR') !== null) {
    return v('MCPBOX_CACHE_DIR');
  }
  if (v('XDG_CACHE_HOME') !== null) {
    return join(v('XDG_CACHE_HOME'), 'mcpbox');
  }
  if (v('HOME') !== null) {
    return join(v('HOME'), '.cache', 'mcpbox');
  }
  return null;
}

/** The store behind the `state` import; in memory only when it has no directory. */
export class StateStore {
  /** @param {string | null} dir */
  constructor(dir) {
    this.path = dir === null ? null : join(dir, STATE_FILE);
    /** @type {Map<string, string> | null} loaded on first use */
    this.entries = null;
  }

  #load() {
    if (this.entries === null) {
      this.entries = new Map();
      if (this.path !== null) {
        try {
          const value = JSON.parse(readFileSync(this.path, 'utf8'));
          const pairs = Object.entries(value);
          // Like serde's map of strings: anything else makes the file an empty store.
          if (value !== null && !Array.isArray(value) && pairs.every(([, v]) => typeof v === 'string')) {
            this.entries = new Map(pairs);
          }
        } catch {
          // Missing or damaged: an empty store.
        }
      }
    }
    return this.entries;
  }

  /** The value under `key`, or undefined. */
  get(key) {
    return this.#load().get(key);
  }

  /** Keeps `value` under `key` and saves the store. */
  set(key, value) {
    if (Buffer.byteLength(key) > MAX_TEXT || Buffer.byteLength(value) > MAX_TEXT) {
      return;
    }
    const entries = this.#load();
    if (entries.get(key) === value || (entries.size >= MAX_ENTRIES && !entries.has(key))) {
      return;
    }
    entries.set(key, value);
    if (this.path !== null) {
      save(this.path, serialize(entries));
    }
  }
}

/** The entries as serde_json's `to_vec_pretty` writes a `BTreeMap<String, String>`. */
export function serialize(entries) {
  if (entries.size === 0) {
    return '{}';
  }
  const keys = [...entries.keys()].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  const lines = keys.map((k) => `  ${JSON.stringify(k)}: ${JSON.stringify(entries.get(k))}`);
  return `{\n${lines.join(',\n')}\n}`;
}

/** Writes through a temporary file and a rename, so readers never see half a file. */
function save(path, text) {
  const tmp = `${path}.tmp.${process.pid}`;
  try {
    mkdirSync(join(path, '..'), { recursive: true });
    writeFileSync(tmp, text);
    renameSync(tmp, path);
  } catch {
    rmSync(tmp, { force: true });
  }
}

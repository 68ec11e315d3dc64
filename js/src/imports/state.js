// `mcpbox:runtime/state`: what the guest remembers about servers (their MCP era), across
// runs and shared with the wasmtime host: `state.json` in the cache directory (../state.js).

import { StateStore } from '../state.js';

/**
 * The `mcpbox:runtime/state` interface over the store in `cacheDir`.
 *
 * @param {string} cacheDir
 */
export function state(cacheDir) {
  const store = new StateStore(cacheDir);
  return {
    get: (key) => store.get(key),
    set: (key, value) => store.set(key, value),
  };
}

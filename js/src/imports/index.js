// The guest's imports, one file per WIT interface of `wit/mcpbox.wit`, as the wasmtime
// host keeps them in host/src/imports/. Each is thin: the real work (processes, pipes,
// sockets, the environment) is the host side's, reached through the hub (../hub.js).
//
// | WIT interface                            | implementation                                  |
// |------------------------------------------|-------------------------------------------------|
// | `mcpbox:runtime/transport`               | transport.js: proxies of the host side's stdio  |
// |                                          | servers (../transport.js, ../stdio.js)          |
// | `mcpbox:runtime/remote`, `wasi:http`     | ../http_imports.js: proxies of the host side's  |
// | (with `wasi:io/streams`, `wasi:io/error`)| grants and requests (../remote.js,              |
// |                                          | ../wasi_http.js)                                |
// | `mcpbox:runtime/control`                 | control.js: the wake signal                     |
// | `mcpbox:runtime/state`                   | state.js (the store: ../state.js)               |
// | `mcpbox:runtime/pins`                    | pins.js                                         |
// | `mcpbox:runtime/blobs`                   | blobs.js (the directory: ../blobs.js)           |
// | `wasi:io/poll`                           | poll.js (blocking is the hub's `poll`)          |
// | `wasi:clocks/monotonic-clock`            | clocks.js                                       |
// | `wasi:clocks/wall-clock`                 | clocks.js                                       |
//
// (`mcpbox:runtime/types` has no functions. jco's glue looks interfaces up without
// their `@version`, although its .d.ts names them with it.)

import { httpImports } from '../http_imports.js';
import { blobs } from './blobs.js';
import { monotonicClock, wallClock } from './clocks.js';
import { control } from './control.js';
import { pins } from './pins.js';
import { pollInterface } from './poll.js';
import { state } from './state.js';
import { transport } from './transport.js';

/**
 * Everything the guest imports, over `hub`; one set serves every instance of a runtime
 * (the state store, the pins and the result directory outlive a trapped guest).
 *
 * @param {import('../hub.js').Hub & {drain(): void, post(msg: object): void, request(msg: object): any, poll(list: object[]): Uint32Array}} hub
 * @param {{cacheDir: string, results: object, maxMessageBytes: number}} options
 *   `McpBox.open`'s
 * @returns {{imports: object, closeAll(): void}} `closeAll` closes what the current
 *   instance left open (its connections, which stops their servers, its HTTP exchanges
 *   and grants): a trapped instance drops nothing itself
 */
export function guestImports(hub, { cacheDir, results, maxMessageBytes }) {
  const poll = pollInterface(hub);
  const connections = transport(hub, poll.Pollable, maxMessageBytes);
  const http = httpImports(hub, poll.Pollable);
  hub.http = http.receive;
  return {
    imports: {
      'mcpbox:runtime/transport': connections.imports,
      'mcpbox:runtime/control': control(hub, poll.Pollable),
      'mcpbox:runtime/state': state(cacheDir),
      'mcpbox:runtime/pins': pins(),
      'mcpbox:runtime/blobs': blobs(results),
      'wasi:io/poll': poll.imports,
      'wasi:clocks/monotonic-clock': monotonicClock(poll.Pollable),
      'wasi:clocks/wall-clock': wallClock,
      ...http.imports,
    },
    closeAll() {
      connections.closeAll();
      http.closeAll();
    },
  };
}

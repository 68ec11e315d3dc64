// Per-call latency of the JavaScript host: sequential `echo` calls against the
// workspace's fixture server, each timed from `callTool` to its result.
//
// Usage (from js/): npm run bench, or after a build with --with-test-binaries:
//   node bench/latency.js [--calls N] [--warmup N] [--fixture PATH] [--thread main|worker]
//                         [--busy-poll MICROSECONDS]
// --thread and --busy-poll are `McpBox.open`'s `thread` (where the guest runs, default
// main) and `busyPoll` (default 50).
// --fixture runs another build of the fixture server: compare with the wasmtime host's
// W2 in `cargo run --release -p mcpbox-bench` against the same, release, build
// (target/release/fixture-server); the default is the tests' debug build, which answers
// about 25 µs later (a bare Node client: 68 vs 43 µs per echo, medians, load 7.8).
// Prints one JSON object: calls, median/p90/p99/mean in microseconds, cpu_us: this
// process's CPU time per call (both threads, not the server's), which load from other
// processes inflates less than the latencies, and sleeps_per_call: the process's voluntary
// context switches per call (with `thread: 'main'`, about one per call that the busy poll
// did not catch).
//
// The warm-up is long (5,000 calls) because V8 compiles the guest's hot functions with
// its optimizing tier in the background for the first second or two, on the same two
// cores: after 100 warm-up calls, 2,000 calls took a mean of 618-643 µs and 750-800 µs of
// CPU each, after 5,000 they took 300-335 µs and 309-342 µs. The
// wasmtime host compiles its guest ahead of time, so only the warm figure compares.

import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

import { McpBox } from '../src/index.js';
import { measure } from './measure.js';

const { values } = parseArgs({
  options: {
    calls: { type: 'string', default: '500' },
    warmup: { type: 'string', default: '5000' },
    fixture: { type: 'string' },
    thread: { type: 'string', default: 'main' },
    'busy-poll': { type: 'string' },
  },
});
const calls = Number(values.calls);
const warmup = Number(values.warmup);

const binaries = new URL('../gen/test-binaries.json', import.meta.url);
const fixture = values.fixture ?? JSON.parse(readFileSync(binaries, 'utf8')).fixtureServer;

const box = await McpBox.open({
  configText: JSON.stringify({ mcpServers: { fx: { command: fixture } } }),
  origin: 'bench',
  thread: values.thread,
  busyPoll: values['busy-poll'] === undefined ? undefined : Number(values['busy-poll']),
});
const [fx] = await box.ready();
if (fx.state !== 'connected') {
  throw new Error(`the fixture server did not connect: ${fx.error}`);
}

await measure({
  host: `js (thread: ${values.thread}, busyPoll: ${values['busy-poll'] ?? 'default'})`,
  fixture,
  calls,
  warmup,
  echo: async (text) => {
    const result = await box.callTool('mcp__fx__echo', { text });
    if (result.text !== text) {
      throw new Error(`unexpected result ${JSON.stringify(result)}`);
    }
  },
});
await box.shutdown();

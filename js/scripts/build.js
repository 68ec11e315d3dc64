// Builds what the JavaScript host runs: the guest component, transpiled by jco.
//
//   1. cargo build -p mcpbox-guest --target wasm32-wasip2 --profile guest
//      --target-dir target/mcpbox-guest, the directory host/build.rs builds the same
//      guest in, so after a cargo build of the host this is a no-op
//      (target/mcpbox-guest/wasm32-wasip2/guest/mcpbox_guest.wasm);
//   2. jco transpile it into js/gen/ (JS glue + core wasm), only when the wasm or jco
//      changed, recorded in js/gen/build.json.
//
// jco is pinned at 1.15.4 (package.json), the newest release whose glue calls a
// synchronous import without ceremony. From 1.16 on, the glue wraps every call between
// the guest and its imports (about 15 per tool call) in the component-model-async task
// machinery (a task, a subtask, promises, debug-log calls), which this guest, all
// synchronous, never uses: with 1.35.0 a warm call took 30 % more CPU and 15 % more
// time (docs/PERFORMANCE.md, "The JS host"). Move the pin when a
// release makes that machinery free for synchronous imports; `npm test` and the stock
// test's `jco serve` (tests/tests/all/stock.rs) run on whatever is pinned here.
//
// With --with-test-binaries it also builds what the tests and the benchmark run
// against, the fixture server and the wasmtime host's CLI (`mcpbox`), and records
// their paths in js/gen/test-binaries.json. It asks for them with
// `cargo build --workspace --bin mcpbox`, then `cargo test --workspace --no-run`
// (which builds the fixture server for the integration tests): after scripts/test,
// which builds the same in one `cargo build --workspace --bin mcpbox --tests`, both
// are no-ops. Another package selection would resolve features differently and
// rebuild wasmtime's dependents (tests/Cargo.toml says how these commands are kept
// resolving alike).
//
// Usage: node scripts/build.js [--with-test-binaries]

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const jsDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const workspace = resolve(jsDir, '..');
const genDir = join(jsDir, 'gen');
const say = (text) => process.stderr.write(`build: ${text}\n`);

function fail(text) {
  say(`error: ${text}`);
  process.exit(1);
}

/**
 * Runs a command in the workspace. Its stderr goes to ours; its stdout too, unless
 * `capture` is set, in which case it is returned.
 */
function run(command, args, { capture = false } = {}) {
  const result = spawnSync(command, args, {
    cwd: workspace,
    stdio: ['ignore', capture ? 'pipe' : 'inherit', 'inherit'],
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  });
  if (result.error) {
    fail(`could not run ${command}: ${result.error.message}`);
  }
  if (result.status !== 0) {
    fail(`\`${command} ${args.join(' ')}\` failed`);
  }
  return result.stdout;
}

function targetDir() {
  const result = spawnSync('cargo', ['metadata', '--format-version', '1', '--no-deps'], {
    cwd: workspace,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.status !== 0) {
    fail(`cargo metadata failed: ${result.stderr || result.error?.message}`);
  }
  return JSON.parse(result.stdout).target_directory;
}

/** The directory of the installed jco package (it exports no `package.json`). */
function jcoPackageDir() {
  const require = createRequire(import.meta.url);
  const isJco = (dir) =>
    existsSync(join(dir, 'package.json')) &&
    JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).name === '@bytecodealliance/jco';
  let dir = dirname(require.resolve('@bytecodealliance/jco'));
  while (!isJco(dir)) {
    if (dirname(dir) === dir) {
      fail('could not find the @bytecodealliance/jco package; run `npm ci` in js/');
    }
    dir = dirname(dir);
  }
  return dir;
}

/**
 * Edits of jco's glue, each `[what, replacement, why]`; `what` must occur exactly once,
 * so a jco release that changes it fails the build instead of running unpatched.
 */
const GLUE_PATCHES = [
  [
    'if (!globalThis?.process?.env?.JCO_DEBUG) { return; }',
    'if (!JCO_DEBUG) { return; }',
    // The glue logs (with `console.debug`) only when JCO_DEBUG is set, but it asks
    // `process.env` about three times per call between the guest and an import, and
    // each read asks the C library (`getenv`). The switch is read once, when the glue
    // loads: the driver runs on the embedder's thread, whose `process.env` must stay live.
    'JCO_DEBUG read once, when the glue loads',
  ],
];

function patchGlue(file) {
  let glue = readFileSync(file, 'utf8');
  for (const [what, replacement, why] of GLUE_PATCHES) {
    const count = glue.split(what).length - 1;
    if (count !== 1) {
      fail(`jco's glue has ${count} copies of \`${what}\`, not one: the patch "${why}" needs updating (scripts/build.js)`);
    }
    glue = glue.replace(what, replacement);
  }
  glue = `const JCO_DEBUG = Boolean(globalThis?.process?.env?.JCO_DEBUG);\n${glue}`;
  writeFileSync(file, glue);
}

/** Transpiles `wasm` into gen/ unless gen/ already holds this wasm transpiled by this jco. */
function transpile(wasm) {
  const jcoDir = jcoPackageDir();
  const jco = JSON.parse(readFileSync(join(jcoDir, 'package.json'), 'utf8'));
  const stamp = {
    wasm,
    sha256: createHash('sha256').update(readFileSync(wasm)).digest('hex'),
    jco: jco.version,
    patches: GLUE_PATCHES.map(([, , why]) => why),
  };
  const stampFile = join(genDir, 'build.json');
  const wanted = `${JSON.stringify(stamp, null, 2)}\n`;
  if (existsSync(stampFile) && readFileSync(stampFile, 'utf8') === wanted) {
    return;
  }
  say(`jco transpile ${wasm} -> js/gen/`);
  const staging = `${genDir}.tmp`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  // --instantiation: the host passes every import at instantiation (src/driver.js), so
  // the glue refers to no WASI shim; --no-wasi-shim keeps jco from mapping wasi:* anyway.
  run(process.execPath, [
    join(jcoDir, jco.bin.jco),
    'transpile',
    wasm,
    '--out-dir',
    staging,
    '--name',
    'mcpbox_guest',
    '--instantiation',
    'async',
    '--no-wasi-shim',
    '--quiet',
  ]);
  patchGlue(join(staging, 'mcpbox_guest.js'));
  writeFileSync(join(staging, 'build.json'), wanted);
  rmSync(genDir, { recursive: true, force: true });
  renameSync(staging, genDir);
}

/**
 * Builds the `mcpbox` CLI and the workspace's tests as scripts/test does and records
 * where cargo put the `mcpbox` CLI and the fixture server, in gen/test-binaries.json.
 */
function buildTestBinaries() {
  const builds = [
    ['build', '--workspace', '--bin', 'mcpbox'],
    ['test', '--workspace', '--no-run'],
  ];
  const wanted = { 'fixture-server': 'fixtureServer', mcpbox: 'mcpbox' };
  const binaries = {};
  for (const args of builds) {
    const messages = run('cargo', [...args, '--message-format=json-render-diagnostics'], { capture: true });
    for (const line of messages.split('\n')) {
      const m = line.startsWith('{') ? JSON.parse(line) : null;
      // The binaries themselves, not their unit-test harnesses (`profile.test`).
      const isBinary = m?.reason === 'compiler-artifact' && m.target.kind.includes('bin') && !m.profile.test;
      if (isBinary && m.executable && wanted[m.target.name]) {
        binaries[wanted[m.target.name]] = m.executable;
      }
    }
  }
  for (const [name, key] of Object.entries(wanted)) {
    if (!binaries[key]) {
      fail(`cargo ${builds.map((b) => b.join(' ')).join(' and ')} did not report the ${name} executable`);
    }
  }
  writeFileSync(join(genDir, 'test-binaries.json'), `${JSON.stringify(binaries, null, 2)}\n`);
}

/** Fails with the fix when the toolchain the workspace selects lacks the wasm target. */
function requireWasmTarget() {
  const sysroot = spawnSync('rustc', ['--print', 'sysroot'], { cwd: workspace, encoding: 'utf8' });
  if (sysroot.status !== 0) {
    fail(`rustc is not usable here: ${sysroot.stderr || sysroot.error?.message}`);
  }
  if (!existsSync(join(sysroot.stdout.trim(), 'lib', 'rustlib', 'wasm32-wasip2'))) {
    fail('the wasm32-wasip2 Rust target is missing: run `rustup target add wasm32-wasip2` (scripts/test does)');
  }
}

const guestTarget = join(targetDir(), 'mcpbox-guest');
requireWasmTarget();
run('cargo', [
  'build',
  '-p',
  'mcpbox-guest',
  '--target',
  'wasm32-wasip2',
  '--profile',
  'guest',
  '--target-dir',
  guestTarget,
]);
const wasm = join(guestTarget, 'wasm32-wasip2', 'guest', 'mcpbox_guest.wasm');
if (!existsSync(wasm)) {
  fail(`cargo did not produce ${wasm}`);
}
transpile(wasm);
if (process.argv.includes('--with-test-binaries')) {
  buildTestBinaries();
}

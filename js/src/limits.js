// The guest's memory limit: the JS host's counterpart of the wasmtime host's
// `StoreLimits` (host/src/state.rs, `Options::memory_limit`, default 256 MiB).
//
// How it is enforced, and why this way: jco exposes no memory-growth hook, and a
// check of `memory.buffer.byteLength` after each export call would only notice after
// the fact (one call could grow the memory to 4 GiB first, and a call that succeeded
// would then be failed). So the core module that defines the guest's linear memory is
// patched before it is compiled: its memory gets a declared maximum of the limit, in
// 64 KiB pages. The engine then refuses any `memory.grow` past it, exactly as
// `StoreLimits` makes wasmtime refuse it: `memory.grow` returns -1, the guest's
// allocation fails and the guest aborts, which traps, and the driver replaces it.
//
// The trap itself says only "unreachable", since the guest has no stderr and its
// names are stripped. Data the host hands the guest (arguments, server messages) is
// placed by the guest's exported `cabi_realloc`; `watchRealloc` wraps it so a trap
// there that the limit explains says so, with the size and the option that raises it.

/** The wasm page size. */
export const PAGE_BYTES = 65536;

/** The default limit, as in the wasmtime host. */
export const DEFAULT_MEMORY_LIMIT = 256 * 1024 * 1024;

/** The memory section's id in a core module. */
const MEMORY_SECTION = 5;

/** Reads an unsigned LEB128 at `pos`; returns `[value, next position]`. */
function readU32(bytes, pos) {
  let value = 0;
  let shift = 0;
  for (;;) {
    const byte = bytes[pos++];
    if (byte === undefined) {
      throw new Error('truncated LEB128 in the guest module');
    }
    value += (byte & 0x7f) * 2 ** shift;
    if ((byte & 0x80) === 0) {
      return [value, pos];
    }
    shift += 7;
  }
}

/** An unsigned LEB128. */
function u32(value) {
  const out = [];
  do {
    let byte = value % 128;
    value = Math.floor(value / 128);
    if (value > 0) {
      byte |= 0x80;
    }
    out.push(byte);
  } while (value > 0);
  return out;
}

/** `n` bytes in MiB (or KiB), for messages. */
export function formatBytes(n) {
  if (n >= 1024 * 1024) {
    const mib = n / (1024 * 1024);
    return `${Number.isInteger(mib) ? mib : mib.toFixed(1)} MiB`;
  }
  return `${Math.ceil(n / 1024)} KiB`;
}

/**
 * A copy of the core module `bytes` whose memories may grow to at most `limitBytes`
 * (rounded down to whole pages), or `bytes` itself when it defines no memory.
 *
 * @param {Uint8Array} bytes a core wasm module
 * @param {number} limitBytes
 * @param {string} name names the module in errors
 * @returns {Uint8Array}
 * @throws {Error} when the module needs more than `limitBytes` from the start
 */
export function capMemory(bytes, limitBytes, name) {
  // wasm32 addresses at most 65536 pages (4 GiB).
  const maxPages = Math.min(Math.floor(limitBytes / PAGE_BYTES), 65536);
  let pos = 8; // magic and version
  while (pos < bytes.length) {
    const id = bytes[pos];
    const [size, payload] = readU32(bytes, pos + 1);
    const end = payload + size;
    if (id !== MEMORY_SECTION) {
      pos = end;
      continue;
    }
    const [count, first] = readU32(bytes, payload);
    const section = [...u32(count)];
    let at = first;
    for (let i = 0; i < count; i++) {
      const flags = bytes[at];
      if (flags !== 0x00 && flags !== 0x01) {
        throw new Error(`${name}: memory ${i} is shared or 64-bit (flags ${flags}); the memory limit cannot be applied`);
      }
      const [min, afterMin] = readU32(bytes, at + 1);
      let max = maxPages;
      at = afterMin;
      if (flags === 0x01) {
        let declared;
        [declared, at] = readU32(bytes, at);
        max = Math.min(declared, maxPages);
      }
      if (min > max) {
        throw new Error(
          `the guest needs ${formatBytes(min * PAGE_BYTES)} of memory to start, more than the memory limit of ` +
            `${formatBytes(limitBytes)} (McpBox.open's \`memoryLimit\` option)`,
        );
      }
      section.push(0x01, ...u32(min), ...u32(max));
    }
    if (at !== end) {
      throw new Error(`${name}: unexpected bytes after the memory section's entries`);
    }
    const out = new Uint8Array(bytes.length - (end - pos) + 1 + u32(section.length).length + section.length);
    out.set(bytes.subarray(0, pos), 0);
    let w = pos;
    out[w++] = MEMORY_SECTION;
    out.set(u32(section.length), w);
    w += u32(section.length).length;
    out.set(section, w);
    w += section.length;
    out.set(bytes.subarray(end), w);
    return out;
  }
  return bytes;
}

/**
 * Wraps the `instantiateCore` jco's glue calls, to keep each core instance's memory
 * (for messages) and to explain traps in `cabi_realloc` that the memory limit caused.
 *
 * @param {number} limitBytes
 * @returns {{ instantiateCore: Function, memoryBytes: () => number }}
 */
export function watchRealloc(limitBytes) {
  let memory = null;
  const instantiateCore = async (module, imports) => {
    const instance = await WebAssembly.instantiate(module, imports);
    const { memory: mem, cabi_realloc: realloc } = instance.exports;
    if (!(mem instanceof WebAssembly.Memory) || typeof realloc !== 'function') {
      return instance;
    }
    memory = mem;
    const exports = { ...instance.exports };
    exports.cabi_realloc = (old, oldSize, align, newSize) => {
      try {
        return realloc(old, oldSize, align, newSize);
      } catch (error) {
        const used = mem.buffer.byteLength;
        if (error instanceof WebAssembly.RuntimeError && used + newSize > limitBytes) {
          throw new WebAssembly.RuntimeError(
            `the guest ran out of memory: ${formatBytes(newSize)} more on top of ${formatBytes(used)} would ` +
              `exceed its memory limit of ${formatBytes(limitBytes)} (McpBox.open's \`memoryLimit\` option ` +
              `raises it) (${error.message})`,
            { cause: error },
          );
        }
        throw error;
      }
    };
    return { exports };
  };
  return { instantiateCore, memoryBytes: () => (memory === null ? 0 : memory.buffer.byteLength) };
}

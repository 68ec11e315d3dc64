// `mcpbox:runtime/pins`: the tool definitions the guest pinned when it first saw them.
// This host keeps them for the driver's life (across guest restarts), not across runs:
// the wasmtime host keeps them per configuration file (host/src/pins.rs).

/** The `mcpbox:runtime/pins` interface, holding what the guest last saved. */
export function pins() {
  let kept = undefined;
  return {
    load: () => kept,
    save: (text) => {
      kept = { pins: text, acceptPending: false };
    },
    // Not across runs: so the guest pins nothing more at its final shutdown.
    keptAcrossRuns: () => false,
  };
}

//! Builds the components the stock tests run (`tests/tests/all/stock.rs`): the
//! stock component, its `stock-config` build and the registry's consumer, each
//! a `cargo build` for `wasm32-wasip2` with the shipped `guest` profile (the
//! `stock-config` build with the guest crate unoptimised: see
//! `mcpbox_tests::stock::stock_config_component`).
//!
//! The tests build them on first use, and libtest starts tests in name order,
//! so `stock::` ones start last: the three builds (about a minute of CPU in all)
//! would run after most tests have ended. `scripts/test` runs this program as
//! the tests start instead, while they mostly wait on their servers; a test
//! that needs a component then finds it built (or waits on cargo's lock for
//! the build under way). Prints where each component is.

fn main() {
    let builds: [fn() -> std::path::PathBuf; 3] = [
        mcpbox_tests::stock::stock_component,
        mcpbox_tests::stock::stock_config_component,
        mcpbox_tests::stock::registry_consumer,
    ];
    std::thread::scope(|scope| {
        for build in builds {
            scope.spawn(move || println!("{}", build().display()));
        }
    });
}

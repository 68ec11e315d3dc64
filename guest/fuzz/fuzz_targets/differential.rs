//! The guest's validator against boon and its pattern matcher against regress, on
//! fuzzer-made inputs: a panic is a disagreement docs/testing.md does not document. The
//! comparisons are the differential tests' own (guest/tests/differential/).
#![no_main]

#[path = "../../tests/differential/fuzzing.rs"]
mod fuzzing;
#[path = "../../tests/differential/patterns.rs"]
mod patterns;
#[path = "../../tests/differential/schemas.rs"]
mod schemas;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(disagreement) = fuzzing::run(data) {
        panic!("{disagreement}");
    }
});

#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpbox_guest::fuzzing::messages(data));

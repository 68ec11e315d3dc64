//! What std would provide to the `no_std` component (see the crate's "Layout"):
//! the allocator, `memcmp`, the canonical ABI's `cabi_realloc` and a panic
//! handler that traps. Shared by both component builds: the mcpbox guest
//! (`component`) and the stock `wasi:http` one (`stock::component`).

#[global_allocator]
static ALLOCATOR: dlmalloc::GlobalDlmalloc = dlmalloc::GlobalDlmalloc;

/// `memcmp`, which core's slice and string comparisons lower to. With std it comes
/// from wasi-libc; the `no_std` build links no libc, so it is defined here.
///
/// # Safety
///
/// `a` and `b` must be valid for reads of `n` bytes (the compiler only emits calls
/// that satisfy this).
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
unsafe extern "C" fn memcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    let mut i = 0;
    while i < n {
        // SAFETY: `i < n` and the caller guarantees `n` readable bytes at both.
        let (x, y) = unsafe { (*a.add(i), *b.add(i)) };
        if x != y {
            return i32::from(x) - i32::from(y);
        }
        i += 1;
    }
    0
}

/// The canonical ABI's allocator export, through which the host hands the guest
/// strings and lists. wasi-libc defines it for std builds on wasip2 (so wit-bindgen
/// does not link its own there); the `no_std` build defines it here, as wit-bindgen
/// does for other targets.
///
/// # Safety
///
/// Called by the host per the canonical ABI: `old_ptr`/`old_len`/`align` describe
/// an earlier allocation from this function (or `old_len` is 0), and `align` is a
/// power of two.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
unsafe extern "C" fn cabi_realloc(
    old_ptr: *mut u8,
    old_len: usize,
    align: usize,
    new_len: usize,
) -> *mut u8 {
    use alloc::alloc::{Layout, alloc, realloc};
    // SAFETY: the canonical ABI guarantees a power-of-two `align` and, for a
    // non-zero `old_len`, a live allocation of that layout at `old_ptr`.
    let ptr = unsafe {
        if old_len == 0 {
            if new_len == 0 {
                return align as *mut u8;
            }
            alloc(Layout::from_size_align_unchecked(new_len, align))
        } else {
            realloc(
                old_ptr,
                Layout::from_size_align_unchecked(old_len, align),
                new_len,
            )
        }
    };
    if ptr.is_null() {
        core::arch::wasm32::unreachable();
    }
    ptr
}

/// A panic is a guest bug: trap, and let the host tear down and re-instantiate the
/// guest. (Printing it would need `wasi:cli/stderr`, which the guest does not import.)
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    core::arch::wasm32::unreachable()
}

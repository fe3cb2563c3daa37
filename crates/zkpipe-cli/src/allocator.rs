//! The process's memory allocator, chosen by `ZKPIPE_ALLOCATOR`: `system` (the default:
//! glibc's malloc, which `huge_pages` tunes) or `mimalloc`. It is read once, on the very
//! first allocation (before `main`), with `libc::getenv`, which allocates nothing; from
//! then on every allocation, reallocation and free goes to that one allocator, so memory
//! from one is never handed to the other. An unknown value falls back to the system
//! allocator for as long as it takes [`check`] (the first thing `main` does) to refuse it.
#![allow(unsafe_code)]

use mimalloc::MiMalloc;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU8, Ordering};

/// The environment variable.
pub const VAR: &str = "ZKPIPE_ALLOCATOR";

const UNDECIDED: u8 = 0;
const SYSTEM: u8 = 1;
const MIMALLOC: u8 = 2;
/// An unknown value: the system allocator, until `main` exits with an error.
const UNKNOWN: u8 = 3;

static STATE: AtomicU8 = AtomicU8::new(UNDECIDED);

/// The global allocator: System or MiMalloc, as `ZKPIPE_ALLOCATOR` says.
pub struct Dispatch;

/// Whether to use mimalloc, deciding on the first call.
#[inline]
fn mimalloc() -> bool {
    match STATE.load(Ordering::Relaxed) {
        UNDECIDED => decide() == MIMALLOC,
        s => s == MIMALLOC,
    }
}

#[cold]
fn decide() -> u8 {
    // SAFETY: the name is a NUL-terminated literal; getenv allocates nothing and returns
    // null or a NUL-terminated string, read at once. This runs on the process's first
    // allocation, before `main`, while nothing else changes the environment.
    let choice = unsafe {
        let value = libc::getenv(c"ZKPIPE_ALLOCATOR".as_ptr());
        if value.is_null() {
            SYSTEM
        } else {
            match std::ffi::CStr::from_ptr(value).to_bytes() {
                b"" | b"system" => SYSTEM,
                b"mimalloc" => MIMALLOC,
                _ => UNKNOWN,
            }
        }
    };
    // Whoever decides first wins; every later call, on any thread, reads that.
    match STATE.compare_exchange(UNDECIDED, choice, Ordering::Relaxed, Ordering::Relaxed) {
        Ok(_) => choice,
        Err(decided) => decided,
    }
}

// SAFETY: every call forwards to one allocator, the same for the whole life of the
// process (decided before the first allocation returns, never changed after), so each
// block is reallocated and freed by the allocator that allocated it; both implement
// GlobalAlloc's contract themselves.
unsafe impl GlobalAlloc for Dispatch {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if mimalloc() {
            MiMalloc.alloc(layout)
        } else {
            System.alloc(layout)
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if mimalloc() {
            MiMalloc.alloc_zeroed(layout)
        } else {
            System.alloc_zeroed(layout)
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if mimalloc() {
            MiMalloc.dealloc(ptr, layout)
        } else {
            System.dealloc(ptr, layout)
        }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if mimalloc() {
            MiMalloc.realloc(ptr, layout, new_size)
        } else {
            System.realloc(ptr, layout, new_size)
        }
    }
}

/// The allocator in use ("system" or "mimalloc"), or the one-line error for an unknown
/// `ZKPIPE_ALLOCATOR`.
pub fn check() -> Result<&'static str, String> {
    // A process that has not allocated yet cannot be running `main`; decide anyway.
    mimalloc();
    match STATE.load(Ordering::Relaxed) {
        MIMALLOC => Ok("mimalloc"),
        UNKNOWN => {
            let value = std::env::var_os(VAR).unwrap_or_default();
            Err(format!(
                "{VAR}: unknown allocator {value:?} (system or mimalloc)"
            ))
        }
        _ => Ok("system"),
    }
}

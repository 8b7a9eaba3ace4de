//! The bot's allocator (mimalloc, as `src/main.rs` has it) with a count of
//! the bytes the bot holds live: what a benchmark's in-process helpers (a
//! feed server, a fake Discord's bookkeeping) allocate is left out, each
//! marked with [`not_the_bot`] or [`outside`].
//!
//! A benchmark installs it with
//! `#[global_allocator] static ALLOC: Counting = Counting;`.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::sync::atomic::{AtomicI64, Ordering};

use mimalloc::MiMalloc;

/// Bytes the bot's threads allocated and have not freed.
static LIVE: AtomicI64 = AtomicI64::new(0);

thread_local! {
    /// Set on a helper's thread, or around a helper's work on the bot's.
    static OUTSIDE: Cell<bool> = const { Cell::new(false) };
}

pub struct Counting;

fn count(bytes: i64) {
    // `try_with`: a thread being torn down has no thread-locals left; its
    // last frees are counted as the bot's, which is what they most likely are.
    if !OUTSIDE.try_with(Cell::get).unwrap_or(false) {
        LIVE.fetch_add(bytes, Ordering::Relaxed);
    }
}

// SAFETY: every call is passed on unchanged to mimalloc, which upholds
// GlobalAlloc's contract; the count only reads the layouts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { MiMalloc.alloc(layout) };
        if !p.is_null() {
            count(layout.size() as i64);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { MiMalloc.alloc_zeroed(layout) };
        if !p.is_null() {
            count(layout.size() as i64);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { MiMalloc.dealloc(ptr, layout) };
        count(-(layout.size() as i64));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { MiMalloc.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(new_size as i64 - layout.size() as i64);
        }
        p
    }
}

/// Bytes the bot holds live now (its Rust heap; SQLite allocates its own).
pub fn live() -> i64 {
    LIVE.load(Ordering::Relaxed)
}

/// Leaves everything this thread allocates from now on out of the count.
pub fn not_the_bot() {
    OUTSIDE.with(|o| o.set(true));
}

/// Runs a helper's `f` on the bot's thread without counting what it allocates.
pub fn outside<R>(f: impl FnOnce() -> R) -> R {
    let was = OUTSIDE.with(|o| o.replace(true));
    let r = f();
    OUTSIDE.with(|o| o.set(was));
    r
}

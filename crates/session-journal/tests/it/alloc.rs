//! A global allocator that records the largest single allocation per thread, so tests
//! can assert that hostile length fields are rejected before anything is allocated,
//! and the bytes a thread holds, so tests can assert what a writer keeps.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

pub(crate) struct Counting;

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
    /// Bytes allocated minus bytes freed on this thread.
    static LIVE: Cell<isize> = const { Cell::new(0) };
}

fn live_add(delta: isize) {
    let _ = LIVE.try_with(|l| l.set(l.get() + delta));
}

/// Bytes allocated minus bytes freed on this thread so far.
pub(crate) fn live_bytes() -> isize {
    LIVE.with(Cell::get)
}

fn note(size: usize) {
    let _ = LARGEST.try_with(|m| {
        if size > m.get() {
            m.set(size);
        }
    });
}

// SAFETY: every call forwards to `System` with the caller's arguments unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        live_add(layout.size() as isize);
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        live_add(layout.size() as isize);
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        live_add(new_size as isize - layout.size() as isize);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        live_add(-(layout.size() as isize));
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Runs `f` and returns its result with the largest single allocation it made on this
/// thread.
pub(crate) fn largest_allocation<R>(f: impl FnOnce() -> R) -> (R, usize) {
    LARGEST.with(|m| m.set(0));
    let r = f();
    (r, LARGEST.with(|m| m.get()))
}

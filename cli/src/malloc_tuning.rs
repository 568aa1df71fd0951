//! The allocator's settings for commands that run many simulations in one
//! process (`sweep`): every layout allocates and frees task columns, edge
//! rows and engine arrays of a few MB each. With glibc's defaults a freed
//! block above the (dynamic) mmap threshold goes back to the kernel and the
//! next layout faults its pages in again, and the heap's top is trimmed
//! after each; here both are kept for reuse.
//!
//! Measured (GPT-3 175B on 1,024 GPUs, 520 layouts, `--ignore-memory`, two
//! cores, `/usr/bin/time`): 0.45 s system time of 4.6 s CPU with the
//! defaults, 0.12 s with these two settings (given as `GLIBC_TUNABLES`);
//! either one alone saves nothing (0.88 s and 0.97 s). Single simulations
//! keep the defaults: there they only raised peak RSS (82 → 102 MB for the
//! 1T model on 3,072 GPUs) for no time.
#![allow(unsafe_code)] // calls into CUDA, the allocator or the OS

/// Blocks of up to 32 MiB come from the heap, not from `mmap`: glibc's own
/// ceiling for its dynamic threshold on 64-bit targets
/// (`DEFAULT_MMAP_THRESHOLD_MAX` = 4 · 1024 · 1024 · sizeof(long),
/// glibc `malloc/malloc.c`), fixed here instead of reached after frees.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD_BYTES: libc::c_int = 32 << 20;

/// Free memory at the heap's top is returned to the kernel only past 1 GiB
/// (the default is twice the mmap threshold): a sweep's layouts reuse it.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TRIM_THRESHOLD_BYTES: libc::c_int = 1 << 30;

/// Keeps freed memory in the process for the next simulation (glibc only;
/// elsewhere nothing changes).
pub fn keep_freed_memory_for_reuse() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes two allocator parameters; it is called
    // before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES);
        libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES);
    }
}

//! Transparent huge pages for a large host's memory: a hint to the kernel, like
//! src/prefetch.rs a hint to the CPU (nothing the program computes changes).
//!
//! A host of 10 000 connections holds ~300-700 MB of flows, queues and segments in the
//! process heap, and each event reads a different connection's few kilobytes: with 4 KiB
//! pages nearly every one of them is also a TLB miss (the L2 TLB reaches a few MB). With
//! 2 MiB pages the whole heap is a few hundred TLB entries. Most machines leave transparent
//! huge pages to `madvise` (/sys/kernel/mm/transparent_hugepage/enabled), so a process gets
//! them only for memory it advises; glibc's malloc advises none unless the user starts the
//! process with `GLIBC_TUNABLES=glibc.malloc.hugetlb=1`. The engine advises the heap
//! itself instead (`advise_heap`): `MADV_HUGEPAGE` on the main heap as it grows (new
//! memory is then faulted in 2 MiB pages) and `MADV_COLLAPSE` (Linux 6.1+) on what was
//! already faulted in small pages (copied into huge ones at once, instead of whenever
//! khugepaged gets to it). The threads of a host run in CPU order (src/engine/parallel.rs)
//! allocate from malloc's other arenas, heaps of 64 MiB of their own: `advise_arenas`
//! does the same for them. Where the kernel or the C library cannot (another OS, THP
//! `never`, an older kernel), the calls fail and nothing else happens.

/// 2 MiB: the huge page of x86_64 and arm64 (4 KiB base pages).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const HUGE: usize = 2 << 20;

/// How much more than it needs malloc takes each time it grows the heap (M_TOP_PAD; glibc's
/// default is 128 KiB). Each growth of a heap whose top was advised is a mapping of its
/// own (the kernel merges none with different advice), and a huge page must lie within
/// one: growing 2 MiB at a time, the heap became a row of ~2 MiB mappings, none holding an
/// aligned 2 MiB. Only address space: the pages are faulted in as they are used.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TOP_PAD: std::ffi::c_int = 32 << 20;

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod sys {
    use std::ffi::{c_int, c_void};

    /// <sys/mman.h>
    pub const MADV_HUGEPAGE: c_int = 14;
    pub const MADV_COLLAPSE: c_int = 25;
    /// <malloc.h>
    pub const M_TOP_PAD: c_int = -2;

    extern "C" {
        pub fn mallopt(param: c_int, value: c_int) -> c_int;
        pub fn madvise(addr: *mut c_void, len: usize, advice: c_int) -> c_int;
        pub fn sbrk(increment: isize) -> *mut c_void;
    }
}

/// How far the main heap was advised: 0 before the first call, usize::MAX when the process
/// has no main heap to advise, else the 2 MiB boundary up to which it was (from the heap's
/// start in /proc/self/maps at the first call).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
static DONE_TO: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The start of the process's main heap (`[heap]` in /proc/self/maps), if it has one.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn heap_start() -> Option<usize> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let line = maps.lines().find(|l| l.ends_with("[heap]"))?;
    usize::from_str_radix(line.split('-').next()?, 16).ok()
}

/// Advise the main heap's memory grown since the last call as huge pages, and collapse
/// what of it was already faulted into huge pages. Cheap when the heap did not grow by a
/// huge page (one libc call that reads a variable): a host calls it as it builds each
/// connection.
pub fn advise_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::sync::atomic::Ordering::Relaxed;
        let done = match DONE_TO.load(Relaxed) {
            0 => {
                // SAFETY: mallopt only sets a malloc parameter (any value is valid).
                unsafe { sys::mallopt(sys::M_TOP_PAD, TOP_PAD) };
                let s = heap_start().unwrap_or(usize::MAX);
                DONE_TO.store(s, Relaxed);
                s
            }
            d => d,
        };
        // SAFETY: sbrk(0) only returns the current program break (nothing is moved).
        let end = unsafe { sys::sbrk(0) } as usize;
        if done == usize::MAX || end < done.saturating_add(HUGE) {
            return;
        }
        let whole = end & !(HUGE - 1);
        let first = (done + HUGE - 1) & !(HUGE - 1);
        // SAFETY: both calls only advise the kernel about pages of the main heap, which this
        // process maps ([done, end) lies within it); neither changes the memory's contents
        // or its mapping. The results are ignored: advice the kernel cannot take changes
        // nothing.
        unsafe {
            sys::madvise(done as *mut _, end - done, sys::MADV_HUGEPAGE);
            if whole > first {
                sys::madvise(first as *mut _, whole - first, sys::MADV_COLLAPSE);
            }
        }
        DONE_TO.store(whole, Relaxed);
    }
}

/// glibc's HEAP_MAX_SIZE on 64-bit: each heap of a thread's arena is a mapping of this size
/// at an address it divides, its used part read-write, the rest not yet accessible.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const ARENA_HEAP: usize = 64 << 20;

/// Each arena heap advised so far: its start and the 2 MiB boundary up to which its used
/// part was collapsed.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
static ARENAS: std::sync::Mutex<Vec<(usize, usize)>> = std::sync::Mutex::new(Vec::new());

/// `advise_heap` for the heaps of malloc's thread arenas: the read-write mappings of
/// /proc/self/maps that start on a 64 MiB boundary and hold no file (their first page is
/// the heap's header). Each is advised whole once (the part not yet accessible takes the
/// advice with it as malloc opens it up), and its used part collapsed as it grows. A few
/// system calls: a host run on threads calls it between windows, not at each event.
pub fn advise_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
            return;
        };
        let Ok(mut arenas) = ARENAS.lock() else {
            return;
        };
        for line in maps.lines() {
            let mut f = line.split_whitespace();
            let (Some(range), Some(perms), Some(_), Some(_), Some(_)) =
                (f.next(), f.next(), f.next(), f.next(), f.next())
            else {
                continue;
            };
            if f.next().is_some() || perms != "rw-p" {
                continue; // a file, a named region ([heap], [stack]) or not writable
            }
            let Some((a, b)) = range.split_once('-') else {
                continue;
            };
            let (Ok(start), Ok(end)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
            else {
                continue;
            };
            if start % ARENA_HEAP != 0 || end - start > ARENA_HEAP {
                continue;
            }
            let i = match arenas.iter().position(|&(s, _)| s == start) {
                Some(i) => i,
                None => {
                    // SAFETY: advice on this process's own heap mapping: nothing in it moves
                    // or changes; the result is ignored (advice not taken changes nothing).
                    unsafe { sys::madvise(start as *mut _, ARENA_HEAP, sys::MADV_HUGEPAGE) };
                    arenas.push((start, start));
                    arenas.len() - 1
                }
            };
            let done = arenas[i].1;
            let whole = end & !(HUGE - 1);
            if whole > done {
                // SAFETY: as above, on the heap's used (read-write) part.
                unsafe { sys::madvise(done as *mut _, whole - done, sys::MADV_COLLAPSE) };
                arenas[i].1 = whole;
            }
        }
    }
}

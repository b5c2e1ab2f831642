//! A hint to the CPU: bring memory about to be read into its caches. It changes nothing the
//! program computes (a prefetch never faults and reads nothing into the program). A host of
//! thousands of connections serves each event from a different connection's few kilobytes,
//! which no longer fit the caches: the engine asks for the next event's connection while it
//! serves the current one (Simulation::run_some).

/// Prefetch the cache lines of `*x` (up to `max_lines` of 64 bytes).
#[inline]
pub fn read<T>(x: &T) {
    read_lines(x, usize::MAX);
}

/// Prefetch the first `max_lines` cache lines of `*x`.
#[inline]
pub fn read_lines<T>(x: &T, max_lines: usize) {
    let p = (x as *const T).cast::<u8>();
    let n = std::mem::size_of::<T>().div_ceil(64).min(max_lines);
    for i in 0..n {
        line(p.wrapping_add(64 * i));
    }
}

/// Prefetch the lines of `*x` but those wholly inside `*hole` (a part of it, or anything).
#[inline]
pub fn read_except<T, U>(x: &T, hole: &U) {
    let p = (x as *const T).cast::<u8>();
    let (h0, h1) = {
        let h = hole as *const U as usize;
        (h, h + std::mem::size_of::<U>())
    };
    for i in 0..std::mem::size_of::<T>().div_ceil(64) {
        let l = p.wrapping_add(64 * i);
        let a = (l as usize) & !63;
        if a < h0 || a + 64 > h1 {
            line(l);
        }
    }
}

/// Prefetch every line `*x` lies on (its first and last included, however aligned).
#[inline]
pub fn span<T>(x: &T) {
    let p = (x as *const T).cast::<u8>();
    let skew = (p as usize) & 63;
    let start = p.wrapping_sub(skew);
    for i in 0..(skew + std::mem::size_of::<T>()).div_ceil(64) {
        line(start.wrapping_add(64 * i));
    }
}

/// Prefetch the line of a deque's first element and the line its next `push_back` writes
/// (an empty deque's are the same place: where its next element goes).
#[inline]
pub fn deque_ends<T>(q: &std::collections::VecDeque<T>) {
    let (a, b) = q.as_slices();
    line(a.as_ptr().cast::<u8>());
    let tail = if b.is_empty() { a } else { b };
    // one past the last element (wrapping: only an address, never dereferenced)
    line(tail.as_ptr().wrapping_add(tail.len()).cast::<u8>());
}

/// Prefetch `n` lines from `p` (an address only: it may be anywhere).
#[inline]
pub fn lines<T>(p: *const T, n: usize) {
    let p = p.cast::<u8>();
    for i in 0..n {
        line(p.wrapping_add(64 * i));
    }
}

/// Prefetch the line a vector's next `push` writes.
#[inline]
pub fn vec_tail<T>(v: &[T]) {
    line(v.as_ptr().wrapping_add(v.len()).cast::<u8>());
}

#[inline(always)]
fn line(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint: it never faults, whatever the address, and neither
    // reads nor writes anything the program sees. (`_mm_prefetch` is `unsafe` only because
    // it is a target-feature intrinsic; SSE is in every x86_64 target.)
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

//! Sequence-number comparison as the kernel does it: `before()`/`after()`
//! [include/net/tcp.h], modulo 2^32.
//!
//! Note on where this applies. The Python model counts sequence numbers as plain unbounded
//! integers from each side's ISN (tcpsim/core/segment.py: a 35-minute 1 Gbit/s run never
//! wraps), and compares them with `<`. The native model keeps them as i64 counted the same way
//! and compares them the same way, so that both engines agree bit for bit. These functions
//! are for raw 32-bit values off the wire (packetdrill scripts, captures), where the kernel's
//! wrap-around rule is the definition.

/// `before(seq1, seq2)` [include/net/tcp.h]: seq1 precedes seq2 in the 2^32 circle, i.e. the
/// signed 32-bit difference seq1 - seq2 is negative.
pub fn before(seq1: u32, seq2: u32) -> bool {
    (seq1.wrapping_sub(seq2) as i32) < 0
}

/// `after(seq2, seq1)` [include/net/tcp.h]: `before(seq1, seq2)` with the arguments swapped.
pub fn after(seq2: u32, seq1: u32) -> bool {
    before(seq1, seq2)
}

/// `between(seq1, seq2, seq3)` [include/net/tcp.h]: is seq2 <= seq1 <= seq3 on the circle?
pub fn between(seq1: u32, seq2: u32, seq3: u32) -> bool {
    seq3.wrapping_sub(seq2) >= seq1.wrapping_sub(seq2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_at_2_pow_32() {
        assert!(before(0xFFFF_FFF0, 0x10));
        assert!(after(0x10, 0xFFFF_FFF0));
        assert!(!before(5, 5) && !after(5, 5));
        assert!(before(1, 2) && !before(2, 1));
        // exactly half the circle apart the signed difference is i32::MIN either way: each
        // is "before" the other, as in the kernel
        assert!(before(0x8000_0000, 0) && before(0, 0x8000_0000));
        assert!(between(0, 0xFFFF_FFFF, 1));
        assert!(!between(2, 0xFFFF_FFFF, 1));
    }
}

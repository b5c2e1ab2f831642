//! FIFO queues that start again at the front of their buffer whenever they empty: a detail
//! of the native engine's memory layout (the Python twin has nothing to mirror; nothing
//! computed changes).
//!
//! A `VecDeque` used as a FIFO walks through its whole buffer: each push takes the slot
//! after the last one, wrapping around, so a link's flight or a socket's retransmit queue
//! of capacity 32 spreads a handful of live entries over every line of a 2-5 KiB block. On
//! a host of thousands of connections each of those lines is read from memory (cachegrind
//! with a scaled-down last-level cache: the flight's `push_back` was the largest source of
//! write misses of a host's events). Rewound as it empties, a queue that drains between
//! bursts -- a request's segments, an ACK in flight, a read that empties the receive queue
//! -- puts its next entries on the lines it used last.

use std::collections::VecDeque;

/// `pop_front` that leaves an emptied queue at the start of its buffer.
pub trait Rewind<T> {
    fn pop_front_rewind(&mut self) -> Option<T>;
}

impl<T> Rewind<T> for VecDeque<T> {
    #[inline]
    fn pop_front_rewind(&mut self) -> Option<T> {
        let x = self.pop_front();
        if self.is_empty() {
            self.clear(); // on an empty deque: only its head goes back to slot 0
        }
        x
    }
}

#[cfg(test)]
mod tests {
    use super::Rewind;
    use std::collections::VecDeque;

    #[test]
    fn an_emptied_queue_starts_again_at_its_first_slot() {
        let mut q: VecDeque<u64> = VecDeque::with_capacity(8);
        q.push_back(1);
        let first = q.as_slices().0.as_ptr();
        q.push_back(2);
        assert_eq!(q.pop_front_rewind(), Some(1));
        assert_eq!(q.pop_front_rewind(), Some(2));
        assert_eq!(q.pop_front_rewind(), None);
        q.push_back(3);
        assert_eq!(q.as_slices().0.as_ptr(), first);
        assert_eq!(q.iter().copied().collect::<Vec<_>>(), [3]);
    }

    #[test]
    fn a_queue_not_emptied_keeps_its_order() {
        let mut q: VecDeque<u64> = (0..5).collect();
        assert_eq!(q.pop_front_rewind(), Some(0));
        q.push_back(5);
        assert_eq!(q.iter().copied().collect::<Vec<_>>(), [1, 2, 3, 4, 5]);
    }
}

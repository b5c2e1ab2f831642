//! The replay applications of `tcpsim validate` (tcpsim/validate/replay.py `ReplayWriter`,
//! `ReplayReader`): the scenario's writer and reader ticking at the times a kernel trace
//! logged, against the model's sockets, so the model is driven by the real timing. They
//! replace the scenario's own writer and reader (which then never start) and count the
//! ticks where the model's socket took or gave other bytes than the kernel's did. And the
//! writer of `tcpsim replay FILE.pcap` (replay.py `ScheduleWriter`): each tick writes its
//! own byte count, what the socket does not take waits for room.

use super::scheduler::{READER, WRITER};
use super::simulation::{Ev, Simulation, RCV, SND};

/// replay.py `ReplayWriter`: (time, bytes the kernel accepted or -1) per tick; a periodic
/// writer's tick continues the write in progress (or starts one of `n`), a bulk writer's
/// tick is a fresh send() of `n`. With `schedule`, replay.py `ScheduleWriter`: (time, bytes
/// to write) per tick, the bytes the socket does not take written when it has room.
#[derive(Clone, Debug, Default)]
pub struct ReplayWriter {
    pub ticks: Vec<(i64, i64)>,
    pub n: i64,
    pub bulk: bool,
    pub schedule: bool,
    i: usize,
    pending: i64,
    /// Bytes waiting for room (only a ScheduleWriter waits: a ReplayWriter never sleeps).
    pub blocked: bool,
    pub written: i64,
    pub size_mismatch: i64,
    /// ns a send() that moved data holds the socket (ScheduleWriter.owns).
    pub owns: i64,
}

impl ReplayWriter {
    pub fn new(ticks: Vec<(i64, i64)>, n: i64, bulk: bool) -> Self {
        ReplayWriter {
            ticks,
            n,
            bulk,
            ..Default::default()
        }
    }

    /// replay.py `ScheduleWriter`.
    pub fn schedule(ticks: Vec<(i64, i64)>, owns: i64) -> Self {
        ReplayWriter {
            ticks,
            schedule: true,
            owns,
            ..Default::default()
        }
    }
}

/// replay.py `ReplayReader`: (time, bytes asked, bytes the kernel read or -1) per tick.
#[derive(Clone, Debug, Default)]
pub struct ReplayReader {
    pub ticks: Vec<(i64, i64, i64)>,
    i: usize,
    pub read_bytes: i64,
    pub size_mismatch: i64,
    /// ns a recv() that moved data holds the socket (ReplayReader.owns, as the scenario's
    /// reader: apps.rs `read`).
    pub owns: i64,
}

impl ReplayReader {
    pub fn new(ticks: Vec<(i64, i64, i64)>, owns: i64) -> Self {
        ReplayReader {
            ticks,
            owns,
            ..Default::default()
        }
    }
}

impl Simulation {
    /// ReplayWriter._next(): the next tick, not before now.
    pub(crate) fn replay_write_next(&mut self) {
        let now = self.sched.now;
        if let Some(w) = &self.replay_writer {
            if let Some(&(t, _)) = w.ticks.get(w.i) {
                self.at(t.max(now), WRITER, Ev::ReplayWrite);
            }
        }
    }

    /// ReplayWriter.tick() (ScheduleWriter.tick() with `schedule`).
    pub(crate) fn replay_write(&mut self) {
        let now = self.sched.now;
        let Some(w) = self.replay_writer.as_mut() else {
            return;
        };
        if w.schedule {
            return self.schedule_write();
        }
        let kernel_n = w.ticks[w.i].1;
        w.i += 1;
        if self.f.socks[SND].error.is_empty() {
            if w.pending == 0 || w.bulk {
                w.pending = w.n;
            }
            let pending = w.pending;
            let put = self.sk_write(SND, now, pending);
            let w = self.replay_writer.as_mut().expect("replaying");
            w.pending -= put;
            w.written += put;
            if put != kernel_n.max(0) {
                w.size_mismatch += 1;
            }
            self.after(SND);
        }
        self.replay_write_next();
    }

    /// ScheduleWriter.tick(): the tick's bytes join those waiting, all go in that the
    /// socket takes; a tick that leaves some waiting counts as a size mismatch.
    fn schedule_write(&mut self) {
        let w = self.replay_writer.as_mut().expect("replaying");
        w.pending += w.ticks[w.i].1;
        w.i += 1;
        self.schedule_flush();
        let w = self.replay_writer.as_mut().expect("replaying");
        if w.pending != 0 {
            w.size_mismatch += 1;
        }
        self.replay_write_next();
    }

    /// ScheduleWriter._flush(): write what waits, as much as the socket takes.
    fn schedule_flush(&mut self) {
        let now = self.sched.now;
        let Some(w) = self.replay_writer.as_ref() else {
            return;
        };
        if !self.f.socks[SND].error.is_empty() || w.pending == 0 {
            return;
        }
        let (pending, owns) = (w.pending, w.owns);
        let put = self.sk_write(SND, now, pending);
        if put != 0 && owns != 0 {
            self.sk_hold(SND, now, owns);
        }
        let w = self.replay_writer.as_mut().expect("replaying");
        w.pending -= put;
        w.written += put;
        w.blocked = w.pending > 0;
        if put != 0 {
            self.after(SND);
        }
    }

    /// ReplayWriter.on_writable() (nothing: it never waits) / ScheduleWriter.on_writable():
    /// the sender has room again.
    pub(crate) fn replay_on_writable(&mut self) {
        if self.replay_writer.as_ref().is_some_and(|w| w.schedule) {
            self.schedule_flush();
        }
    }

    /// ReplayReader._next().
    pub(crate) fn replay_read_next(&mut self) {
        let now = self.sched.now;
        if let Some(r) = &self.replay_reader {
            if let Some(&(t, _, _)) = r.ticks.get(r.i) {
                self.at(t.max(now), READER, Ev::ReplayRead);
            }
        }
    }

    /// ReplayReader.tick().
    pub(crate) fn replay_read(&mut self) {
        let now = self.sched.now;
        let Some(r) = self.replay_reader.as_mut() else {
            return;
        };
        let (_, ask, kernel_got) = r.ticks[r.i];
        r.i += 1;
        let mut got = 0;
        if self.f.socks[RCV].error.is_empty() {
            got = self.sk_read(RCV, now, ask);
            if got != 0 {
                let owns = self.replay_reader.as_ref().expect("replaying").owns;
                if owns != 0 {
                    self.sk_hold(RCV, now, owns);
                }
                self.replay_reader.as_mut().expect("replaying").read_bytes += got;
                self.after(RCV);
            }
        }
        if got != kernel_got.max(0) {
            self.replay_reader
                .as_mut()
                .expect("replaying")
                .size_mismatch += 1;
        }
        self.replay_read_next();
    }
}

//! tcpsim's native engine: the Rust twin of the Python reference model in `tcpsim/core`.
//!
//! PEP 399 arrangement: the Python model is the readable definition and the fallback; this
//! crate mirrors it room by room, with the same names and the same kernel citations, and is
//! held to it by differential tests (tests/native/ in the repository). Nothing here knows
//! about Python unless the `python` feature is on: the bindings live in `py.rs` alone, so the
//! core builds and tests as plain Rust (`cargo test`).
//!
//! Rooms (Rust file <- Python module):
//! - `bench`     <- tcpsim/bench_socket.py: the socket alone in a Rust-only loop
//! - `constants` <- tcpsim/core/constants.py
//! - `seq`       <- the kernel's `before()`/`after()` (include/net/tcp.h); see its note
//! - `segment`   <- tcpsim/core/segment.py
//! - `skb`       <- tcpsim/core/skb.py
//! - `devices`   <- tcpsim/core/devices.py
//! - `clock`     <- tcpsim/core/clock.py (`ExactClock` and `JiffyClock`)
//! - `mib`       <- tcpsim/core/mib.py
//! - `sysctl`    <- tcpsim/core/sysctl.py
//! - `sender`    <- tcpsim/core/sender.py (`impl TcpSocket`) and its constants
//! - `cong`      <- tcpsim/core/cong/ (Reno, CUBIC with HyStart: tcp_congestion_ops)
//! - `state`     <- the state records of /work/state-spec.md (socket.py, ack.py, sender.py init)
//! - `socket`    <- tcpsim/core/socket.py `TcpSocket`: open, handshake, close, timers, events
//! - `memory`    <- tcpsim/core/memory.py (`impl TcpSocket`)
//! - `receive`   <- tcpsim/core/receiver.py (`impl TcpSocket`)
//! - `ack`       <- tcpsim/core/ack.py (`impl TcpSocket`)
//! - `kernel`    <- the decision points of tcpsim/policy.py (a default asks the era underneath)
//! - `models`    <- models/: one file per era, and the profile registry
//! - `patches`   <- models/patches/: one file per built-in patch
//! - `py_kernel` <- bindings of single decision points for tests/native/test_native_kernel.py
//! - `engine`    <- tcpsim/engine/: scheduler, link, apps, simulation, trace columns
//! - `py_engine` <- bindings of the engine for tcpsim/engine/native.py
//! - `value`     <- our own: a field's value, to compare records field by field

pub mod ack;
pub mod backlog;
pub mod bench;
pub mod clock;
pub mod cong;
pub mod constants;
pub mod devices;
pub mod engine;
pub mod fields;
pub mod hugepages;
pub mod kernel;
pub mod memcg;
pub mod memory;
pub mod mib;
pub mod models;
pub mod patches;
pub mod prefetch;
pub mod protmem;
pub mod receive;
pub mod recovery;
pub mod rewind;
pub mod segment;
pub mod sender;
pub mod seq;
pub mod skb;
pub mod socket;
pub mod state;
pub mod sysctl;
pub mod value;

mod arith;

#[cfg(feature = "python")]
mod py;
#[cfg(feature = "python")]
mod py_engine;
#[cfg(feature = "python")]
mod py_kernel;
#[cfg(feature = "python")]
mod py_patch;
#[cfg(feature = "python")]
mod py_view;

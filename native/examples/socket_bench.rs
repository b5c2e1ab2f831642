//! The native socket alone, from Rust with no Python: CPU microseconds per in-order segment
//! (src/bench.rs `drive`: segment in, read, outbox drained, due timers run), the best of
//! REPEAT runs. CPU time is the thread's own (/proc/thread-self/schedstat), as the Python
//! benchmark's process_time(), so a loaded machine does not inflate it; wall time where
//! /proc has no schedstat.
//!
//!     cargo run --release --example socket_bench [-- SEGMENTS [PROFILE [DEVICE [REPEAT]]]]
//!
//! benchmarks/native_socket.py --rust runs it. A number, never pass/fail.

use std::env;
use std::fs;
use std::process::ExitCode;
use std::sync::OnceLock;
use std::time::Instant;

use tcpsim_native::bench::{drive, open_receiver, MSS};

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let arg = |i: usize, default: &str| args.get(i).cloned().unwrap_or_else(|| default.into());
    let n: i64 = match arg(0, "200000").parse() {
        Ok(n) if n > 0 => n,
        _ => return usage("SEGMENTS must be a positive integer"),
    };
    let (profile, dev) = (arg(1, "linux-6.18"), arg(2, "veth"));
    let repeat: u32 = match arg(3, "5").parse() {
        Ok(r) if r > 0 => r,
        _ => return usage("REPEAT must be a positive integer"),
    };
    println!("socket alone, Rust loop, {n} in-order segments + reads ({profile}, {dev}):");
    for trace in [false, true] {
        let mut best = f64::INFINITY;
        for _ in 0..repeat {
            let mut sk = match open_receiver(&profile, &dev, trace) {
                Ok(sk) => sk,
                Err(e) => return usage(&e),
            };
            let t0 = cpu_seconds();
            let got = drive(&mut sk, n);
            let dt = cpu_seconds() - t0;
            if got != n * MSS {
                eprintln!("socket_bench: read {got} of {} bytes", n * MSS);
                return ExitCode::FAILURE;
            }
            best = best.min(dt);
        }
        let what = if trace {
            "with trace events"
        } else {
            "no trace"
        };
        println!(
            "  rust    {:9.3} us/segment  ({what})",
            best * 1e6 / n as f64
        );
    }
    ExitCode::SUCCESS
}

/// Seconds of CPU this thread has run (the first field of /proc/thread-self/schedstat, ns),
/// or wall-clock seconds since the first call where that file is missing.
fn cpu_seconds() -> f64 {
    static START: OnceLock<Instant> = OnceLock::new();
    let start = *START.get_or_init(Instant::now);
    fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map(|ns| ns as f64 * 1e-9)
        .unwrap_or_else(|| start.elapsed().as_secs_f64())
}

fn usage(why: &str) -> ExitCode {
    eprintln!(
        "socket_bench: error: {why}; usage: socket_bench [SEGMENTS [PROFILE [DEVICE [REPEAT]]]]"
    );
    ExitCode::from(2)
}

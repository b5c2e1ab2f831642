//! The engine (tcpsim/engine/): the event loop, the link, the applications, the run and its
//! trace columns, with the Python engine's names and order of events.
//!
//! - `scheduler`  <- tcpsim/engine/scheduler.py
//! - `random`     <- CPython's `random.Random` (the link's loss and jitter)
//! - `link`       <- tcpsim/engine/link.py
//! - `apps`       <- tcpsim/engine/apps.py and the kinds of tcpsim/workload.py
//! - `simulation` <- tcpsim/engine/simulation.py
//! - `parallel`   <- a host run in CPU order, on several threads (no Python twin yet)
//! - `replay`     <- the replay applications of tcpsim/validate/replay.py
//! - `trace`      <- the row building of tcpsim/trace/recorder.py

pub mod apps;
pub mod link;
pub mod parallel;
pub mod random;
pub mod replay;
pub mod scheduler;
pub mod simulation;
pub mod trace;

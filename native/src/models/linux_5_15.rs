//! Linux 5.15 LTS: the base receive path every later era builds on (models/linux_5_15.py).
//!
//! Every default method of `Kernel` is 5.15's, so this era overrides nothing.

use crate::kernel::Kernel;

/// Linux 5.15: adv_win_scale windows, classic DRS, never-shrink windows.
#[derive(Debug, Clone, Copy, Default)]
pub struct Linux515;

impl Kernel for Linux515 {
    fn release(&self) -> &'static str {
        "5.15"
    }
}

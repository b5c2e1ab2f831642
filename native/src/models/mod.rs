//! Kernel eras: one file per era, each overriding what its Python twin in models/ overrides.
//!
//! So far the eras whose overrides the ported rooms need: 5.15 (the base, all defaults), 6.6
//! (scaling_ratio windows) and 6.8 (the 50 % initial ratio). 6.1 and 6.1.59 decide like 5.15
//! in everything ported so far, and 6.10 to 6.18 like 6.8; their own files come with the
//! decision points they change.

pub mod linux_5_15;
pub mod linux_6_6;
pub mod linux_6_8;

use crate::kernel::Kernel;

/// The era a built-in profile runs on, for the decision points ported so far.
pub fn kernel_for(profile: &str) -> Result<Box<dyn Kernel>, String> {
    match profile {
        "linux-5.15" | "linux-6.1" | "linux-6.1.59" => Ok(Box::new(linux_5_15::Linux515)),
        "linux-6.6" => Ok(Box::new(linux_6_6::Linux66)),
        "linux-6.8" | "linux-6.10" | "linux-6.14" | "linux-6.17" | "linux-6.18" => {
            Ok(Box::new(linux_6_8::Linux68))
        }
        _ => Err(format!("unknown profile '{profile}' for the native engine")),
    }
}

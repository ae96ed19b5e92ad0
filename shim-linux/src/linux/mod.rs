//! Linux.

pub mod clock;
pub mod exit;
pub mod interrupts;
pub mod pid1;
pub mod procfs;
pub mod seccomp;
pub mod sys;
pub mod tracefs;

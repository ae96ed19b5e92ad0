//! What the command line asks for.

pub mod cpus;
pub mod parse;

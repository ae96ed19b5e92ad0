//! latscope, the target program.
#![deny(unsafe_code)]
#![deny(missing_docs)]

pub mod app;
pub mod config;
pub mod error;
pub mod link;
pub mod linux;
pub mod output;
pub mod report;
pub mod rt;

pub use error::Error;

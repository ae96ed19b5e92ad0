//! `/metrics` for a lab's Prometheus: what is said ([`exposition`]) and
//! how it is served ([`server`]).

#![deny(clippy::wildcard_enum_match_arm)]

mod exposition;
mod server;

pub(crate) use server::serve;

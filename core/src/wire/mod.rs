//! The wire protocol: frames from the target to the host.
//!
//! Every frame is `00 ‖ COBS(postcard(Frame) ‖ CRC-32 LE) ‖ 00`. The 0x00
//! delimiter on both sides lets a receiver that joins mid-stream, or that
//! lost a delimiter to corruption, resynchronise at once. The CRC-32
//! (ISO-HDLC) covers the postcard payload, so a corrupted frame is rejected.
//! The first payload byte is the protocol version, checked before anything
//! else is decoded, and every frame carries a sequence number, so loss is
//! counted.
//!
//! A run streams: a [`Hello`] (resent periodically and on every new
//! connection), then per report interval and thread a [`HistDelta`] (one or
//! more parts) and a [`ThreadStats`]; every few reports a full cumulative
//! snapshot in [`SnapshotChunk`]s of at most [`MAX_SMALL_FRAME`] bytes; any
//! [`SpikeRecord`]s and [`LogLine`]s; and at the end a [`Bye`].

mod ack;
mod cobs_fast;
mod decode;
mod encode;
mod fast;
mod types;

pub use ack::{Ack, AckReader, MAX_ACK_FRAME};
pub use decode::{DecodeError, Decoder, LinkStats};
pub use encode::{encode, Encoder, MAX_FRAME, MAX_PAYLOAD};
pub use types::*;

/// The protocol version this build speaks (the first payload byte).
pub const PROTOCOL_VERSION: u8 = 1;

/// The largest encoded size (delimiters included) of the frames that must
/// get through a noisy line often: snapshot chunks, deltas and stats.
pub const MAX_SMALL_FRAME: usize = 256;

/// An 8-byte hash of the frame schema (names and types of every field).
/// The hello carries it; a host refuses a stream whose schema differs.
pub const SCHEMA_KEY: [u8; 8] =
    postcard_schema::key::Key::for_path::<Frame>("latscope/frame").to_bytes();

#[cfg(test)]
mod tests;

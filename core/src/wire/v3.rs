//! Protocol version 3, frozen: its frame enum, for its schema key, and the
//! upgrade of its hello.
//!
//! Version 4 appended the [`super::Body::EvidenceHead`] and
//! [`super::Body::EvidencePart`] variants after the others and changed
//! nothing else. Every version-3 body encodes the same in version 4
//! (postcard numbers the variants in order), so the decoder reads a
//! version-3 frame as version 4's: its explanations through `v4`, whose
//! types they are, the rest as the current types; only its hello's schema
//! key, the key of this enum, is upgraded to the current
//! [`super::SCHEMA_KEY`] (any other key is kept, and the host reports the
//! mismatch as before). Its hello is version 5's (`v5`). The
//! types this module borrows from the current ones are part of
//! [`SCHEMA_KEY`], which a test pins to the key version-3 hellos carry
//! (`tests/golden/v3`): if one of them changes, that pin fails, and the
//! changed type gets a frozen copy here.

use postcard::experimental::max_size::MaxSize;
use postcard_schema::Schema;
use serde::{Deserialize, Serialize};

use super::v4::Attribution;
use super::v5::{self, Hello};
use crate::wire as now;
use crate::wire::{Aggregate, Bye, HistDelta, LogLine, SnapshotChunk, SpikeSample, ThreadStats};

/// The schema key version-3 hellos carry.
pub const SCHEMA_KEY: [u8; 8] =
    postcard_schema::key::Key::for_path::<Frame>("latscope/frame").to_bytes();

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, MaxSize, Schema)]
pub struct Frame {
    pub version: u8,
    pub seq: u32,
    pub body: Body,
}

#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, MaxSize, Schema)]
pub enum Body {
    Hello(Hello),
    Stats(ThreadStats),
    Delta(HistDelta),
    Chunk(SnapshotChunk),
    Spike(SpikeSample),
    Log(LogLine),
    Bye(Bye),
    Explain(Attribution),
    Aggregate(Aggregate),
}

/// The current hello a version-3 hello says: the same (version 5's, see
/// `v5`), with version 3's schema key read as the current one.
pub(super) fn upgrade_hello(h: Hello) -> now::Hello {
    v5::upgrade_hello_of(h, SCHEMA_KEY)
}

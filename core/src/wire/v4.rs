//! Protocol version 4, frozen: the explanation types that version 5
//! changed, exactly as version 4 sent them (same names and shapes), its
//! frame enum for its schema key, and their upgrade to the current types.
//!
//! Version 5 made an explanation's cause a typed [`crate::explain::Culprit`]
//! where version 4 had a kind, an `id` with five meanings, a priority with
//! an `i32::MIN` sentinel and a name. Every other body encodes the same in
//! both versions, so the decoder reads a version-4 (or 2 or 3) explain
//! frame through the frozen [`Attribution`] here and upgrades it, and its
//! hello's schema key, the key of this enum, reads as the current
//! [`super::SCHEMA_KEY`] (any other key is kept, and the host reports the
//! mismatch as before). Its hello is version 5's (`v5`, frozen when
//! version 6 changed the wake modes). The types this module borrows from
//! the current ones are part of [`SCHEMA_KEY`], which a test pins to the key
//! version-4 hellos carry (`tests/golden/v4`): if one of them changes,
//! that pin fails, and the changed type gets a frozen copy here.
//!
//! What a version-4 cause line becomes, by kind:
//! * `Irq`: [`Culprit::Irq`], `id` the IRQ, the name, and a known `prio`
//!   the IRQ thread's;
//! * `Softirq`: [`Culprit::Softirq`] of vector `id`;
//! * `Vector`: [`Culprit::Vector`];
//! * `Task`: [`Culprit::Task`], `id` the pid;
//! * `TimerDelay`: [`Culprit::TimerDelay`], running the task of `id`,
//!   name and `prio` unless `id` was 0 and the name empty (not shown);
//! * `Untraced`: [`Culprit::Untraced`] by the reason `id` gave (0 off,
//!   1 paused, 2 lost, whose `count` was the events lost, 3 lost with no
//!   count, 4 beyond the history); a lost line becomes one stretch of
//!   [`Untraced::Lost`] with that many events;
//! * `IdleExit`, `Other`, `Masked`: the same.

use heapless::{String, Vec};
use postcard::experimental::max_size::MaxSize;
use postcard_schema::Schema;
use serde::{Deserialize, Serialize};

use crate::explain::{
    self as now_explain, Culprit, PrioClass, Softirq, Untraced, MAX_CAUSES, NAME_LEN,
};
use crate::wire as now;
use crate::wire::v5::{self, Hello};
use crate::wire::{
    Aggregate, Bye, EvidenceHead, EvidencePart, HistDelta, LogLine, SnapshotChunk, SpikeSample,
    ThreadStats,
};

/// The schema key version-4 hellos carry.
pub const SCHEMA_KEY: [u8; 8] =
    postcard_schema::key::Key::for_path::<Frame>("latscope/frame").to_bytes();

// Every version-4 frame fits the current decoder's buffer.
const _: () = assert!(Frame::POSTCARD_MAX_SIZE + 4 <= now::MAX_PAYLOAD);

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
    EvidenceHead(EvidenceHead),
    EvidencePart(EvidencePart),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, MaxSize, Schema)]
pub struct Attribution {
    pub cpu: u32,
    pub cycle: u64,
    pub deadline_ns: u64,
    pub latency_ns: u64,
    pub coarse: bool,
    pub partial: bool,
    pub causes: Vec<Cause, MAX_CAUSES>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, MaxSize, Schema)]
pub struct Cause {
    pub kind: CauseKind,
    pub id: u32,
    pub prio: i32,
    pub name: String<NAME_LEN>,
    pub count: u32,
    pub ns: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, MaxSize, Schema)]
pub enum CauseKind {
    Irq,
    Softirq,
    Vector,
    TimerDelay,
    IdleExit,
    Task,
    Untraced,
    Other,
    Masked,
}

/// The current hello a version-4 hello says: the same (version 5's, see
/// `v5`), with version 4's schema key read as the current one.
pub(super) fn upgrade_hello(h: Hello) -> now::Hello {
    v5::upgrade_hello_of(h, SCHEMA_KEY)
}

/// The current explanation a version-4 (or 1 to 3) one says.
pub(super) fn upgrade_attribution(a: Attribution) -> now_explain::Attribution {
    let mut out = now_explain::Attribution::new(a.cpu, a.cycle, a.deadline_ns, a.latency_ns);
    out.coarse = a.coarse;
    out.partial = a.partial;
    for c in a.causes {
        let (culprit, count) = culprit(&c);
        // Not `add`: the lines stay as they were sent, none merged.
        // Cannot fail: both hold MAX_CAUSES.
        let _ = out.causes.push(now_explain::Cause {
            culprit,
            count,
            ns: c.ns,
        });
    }
    out
}

/// What a version-4 line names, and its count of episodes.
fn culprit(c: &Cause) -> (Culprit, u32) {
    let task = || now_explain::Task {
        pid: c.id,
        comm: c.name.clone(),
        prio: PrioClass::from_kernel(c.prio),
    };
    let culprit = match c.kind {
        CauseKind::Irq => Culprit::Irq {
            irq: c.id,
            name: c.name.clone(),
            thread: PrioClass::from_kernel(c.prio),
        },
        CauseKind::Softirq => Culprit::Softirq(Softirq::from_vector(c.id)),
        CauseKind::Vector => Culprit::Vector {
            vector: c.id,
            name: c.name.clone(),
        },
        CauseKind::Task => Culprit::Task(task()),
        CauseKind::TimerDelay => Culprit::TimerDelay {
            running: (c.id != 0 || !c.name.is_empty()).then(task),
        },
        CauseKind::IdleExit => Culprit::IdleExit,
        CauseKind::Other => Culprit::Other,
        CauseKind::Masked => Culprit::Masked,
        CauseKind::Untraced => Culprit::Untraced(match c.id {
            1 => Untraced::Paused,
            2 => {
                let events = c.count;
                return (Culprit::Untraced(Untraced::Lost { events }), 1);
            }
            3 => Untraced::LostUnknown,
            4 => Untraced::Beyond,
            _ => Untraced::Off,
        }),
    };
    (culprit, c.count)
}

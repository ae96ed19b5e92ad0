//! Raw events to the classifier's [`Event`]s.

use super::events::{EventFormats, Known, Shape};
use super::fields::Field;
use super::{Comms, RawEvent};
use crate::explain::{Event, EventKind, TaskRef};
use crate::Error;

/// `sched_switch`'s `prev_state` bits, lowest first, as the kernel's text
/// prints them (`TASK_REPORT`: one bit at a time).
const STATES: [&str; 8] = ["S", "D", "T", "t", "X", "Z", "P", "I"];

/// Decodes the raw events of every CPU of one instance into [`Event`]s.
///
/// Feed it the events of each CPU's pages in the order they were read; it
/// learns task names as it goes (see [`Comms`]).
#[derive(Debug, Clone)]
pub struct Decoder {
    formats: EventFormats,
    comms: Comms,
}

impl Decoder {
    /// A decoder for events described by `formats`.
    pub const fn new(formats: EventFormats) -> Self {
        Self {
            formats,
            comms: Comms::new(),
        }
    }

    /// Decodes `raw`, an event of CPU `cpu`. An event of an id the formats
    /// do not know is [`EventKind::Other`] with an empty name.
    ///
    /// # Errors
    ///
    /// [`Error::BadTracePage`] (at the event's offset) if the payload is
    /// too short for its fields, or a pid, IRQ or priority is out of
    /// range.
    pub fn decode<'a>(&'a mut self, cpu: u32, raw: &RawEvent<'a>) -> Result<Event<'a>, Error> {
        let bad = |why| Error::BadTracePage {
            offset: raw.offset,
            why,
        };
        let p = raw.payload;
        let id = int(Field::fixed(0, 2, false), p).map_err(bad)?;
        let pid = int(self.formats.common_pid, p).map_err(bad)?;
        let pid = u32::try_from(pid).map_err(|_| bad("pid out of range"))?;
        let known = u16::try_from(id).ok().and_then(|id| self.formats.find(id));
        // Names first, so that the event's own task is named by it.
        for (pid, comm) in named_tasks(known.map(|k| k.shape)) {
            self.comms
                .learn(unsigned(pid, p).map_err(bad)?, text(comm, p).map_err(bad)?);
        }
        let kind = match known {
            Some(known) => kind_of(known, p).map_err(bad)?,
            None => EventKind::Other { name: "" },
        };
        Ok(self.event(cpu, raw.ts_ns, pid, kind))
    }

    fn event<'a>(&'a self, cpu: u32, ts_ns: u64, pid: u32, kind: EventKind<'a>) -> Event<'a> {
        Event {
            task: TaskRef {
                comm: self.comms.name(pid),
                pid,
            },
            cpu,
            ts_ns,
            kind,
        }
    }
}

/// What the fields of `known`'s shape hold in payload `p`; the error is
/// why they do not read.
fn kind_of<'a>(known: &'a Known, p: &'a [u8]) -> Result<EventKind<'a>, &'static str> {
    Ok(match known.shape {
        Shape::IrqEntry { irq, name } => EventKind::IrqEntry {
            irq: unsigned(irq, p)?,
            name: text(name, p)?,
        },
        Shape::IrqExit { irq } => EventKind::IrqExit {
            irq: unsigned(irq, p)?,
        },
        Shape::SoftirqEntry { vec } => EventKind::SoftirqEntry {
            vec: unsigned(vec, p)?,
        },
        Shape::SoftirqExit { vec } => EventKind::SoftirqExit {
            vec: unsigned(vec, p)?,
        },
        Shape::VectorEntry { vector } => EventKind::VectorEntry {
            name: known.name.as_str(),
            vector: unsigned(vector, p)?,
        },
        Shape::VectorExit { vector } => EventKind::VectorExit {
            name: known.name.as_str(),
            vector: unsigned(vector, p)?,
        },
        Shape::Switch {
            prev_comm,
            prev_pid,
            prev_prio,
            prev_state,
            next_comm,
            next_pid,
            next_prio,
        } => EventKind::Switch {
            prev: TaskRef {
                comm: text(prev_comm, p)?,
                pid: unsigned(prev_pid, p)?,
            },
            prev_prio: signed(prev_prio, p)?,
            prev_state: state_text(int(prev_state, p)?),
            next: TaskRef {
                comm: text(next_comm, p)?,
                pid: unsigned(next_pid, p)?,
            },
            next_prio: signed(next_prio, p)?,
        },
        Shape::Wakeup { comm, pid, prio } => EventKind::Wakeup {
            task: TaskRef {
                comm: text(comm, p)?,
                pid: unsigned(pid, p)?,
            },
            prio: signed(prio, p)?,
        },
        Shape::Print { buf } => EventKind::Marker {
            text: text(buf, p)?.trim_end_matches('\n'),
        },
    })
}

const SHORT: &str = "event payload shorter than its fields";
const RANGE: &str = "field out of range";

/// Field `f` of payload `p` as an integer.
fn int(f: Field, p: &[u8]) -> Result<i64, &'static str> {
    f.int(p).ok_or(SHORT)
}

/// Field `f` of payload `p` as a `u32`.
fn unsigned(f: Field, p: &[u8]) -> Result<u32, &'static str> {
    u32::try_from(int(f, p)?).map_err(|_| RANGE)
}

/// Field `f` of payload `p` as an `i32`.
fn signed(f: Field, p: &[u8]) -> Result<i32, &'static str> {
    i32::try_from(int(f, p)?).map_err(|_| RANGE)
}

/// Field `f` of payload `p` as text.
fn text(f: Field, p: &[u8]) -> Result<&str, &'static str> {
    f.text(p).ok_or(SHORT)
}

/// The (pid, comm) fields of the tasks an event names in full: both of
/// a `sched_switch`, the woken one of a `sched_wakeup`.
fn named_tasks(shape: Option<Shape>) -> impl Iterator<Item = (Field, Field)> {
    let (a, b) = match shape {
        Some(Shape::Switch {
            prev_comm,
            prev_pid,
            next_comm,
            next_pid,
            ..
        }) => (Some((prev_pid, prev_comm)), Some((next_pid, next_comm))),
        Some(Shape::Wakeup { comm, pid, .. }) => (Some((pid, comm)), None),
        _ => (None, None),
    };
    a.into_iter().chain(b)
}

/// `prev_state` as the kernel's text prints it: `R` for a task that
/// yielded runnable, `R+` for one preempted (the `TASK_REPORT_MAX` bit
/// alone), else the letter of its state's bit.
fn state_text(v: i64) -> &'static str {
    let low = v & 0xff;
    if low == 0 {
        return if v == 0 { "R" } else { "R+" };
    }
    STATES
        .get(low.trailing_zeros() as usize)
        .copied()
        .unwrap_or("?")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ringbuf::{Page, PageHeader};
    use std::vec::Vec;

    const SWITCH: &str = "name: sched_switch
ID: 372
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;
\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;
\tfield:long prev_state;\toffset:32;\tsize:4;\tsigned:1;
\tfield:char next_comm[16];\toffset:36;\tsize:16;\tsigned:0;
\tfield:pid_t next_pid;\toffset:52;\tsize:4;\tsigned:1;
\tfield:int next_prio;\toffset:56;\tsize:4;\tsigned:1;
";
    const IRQ: &str = "name: irq_handler_entry
ID: 225
format:
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;
\tfield:int irq;\toffset:8;\tsize:4;\tsigned:1;
\tfield:__data_loc char[] name;\toffset:12;\tsize:4;\tsigned:0;
";

    fn payload(id: u16, pid: u32, rest: &[u8]) -> Vec<u8> {
        let mut p = Vec::new();
        p.extend_from_slice(&id.to_le_bytes());
        p.extend_from_slice(&[0, 0]);
        p.extend_from_slice(&pid.to_le_bytes());
        p.extend_from_slice(rest);
        p
    }

    fn comm(s: &str) -> [u8; 16] {
        let mut c = [0u8; 16];
        c[..s.len()].copy_from_slice(s.as_bytes());
        c
    }

    /// A 32-bit kernel's `sched_switch` (4-byte `long`): `prev` preempted
    /// by `next`.
    fn switch(prev: (&str, u32), state: i32, next: (&str, u32)) -> Vec<u8> {
        let mut r = Vec::new();
        r.extend_from_slice(&comm(prev.0));
        r.extend_from_slice(&prev.1.to_le_bytes());
        r.extend_from_slice(&120i32.to_le_bytes());
        r.extend_from_slice(&state.to_le_bytes());
        r.extend_from_slice(&comm(next.0));
        r.extend_from_slice(&next.1.to_le_bytes());
        r.extend_from_slice(&9i32.to_le_bytes());
        payload(372, prev.1, &r)
    }

    fn decoder() -> Decoder {
        let mut f = EventFormats::new();
        f.add(SWITCH).unwrap();
        f.add(IRQ).unwrap();
        Decoder::new(f)
    }

    fn raw(p: &[u8]) -> RawEvent<'_> {
        RawEvent {
            ts_ns: 5,
            payload: p,
            offset: 16,
        }
    }

    #[test]
    fn a_switch_names_both_tasks_for_later_events() {
        let mut d = decoder();
        let p = switch(("stress", 40), 0x100, ("irq/13-uart", 41));
        let e = d.decode(1, &raw(&p)).unwrap();
        assert_eq!(e.cpu, 1);
        assert_eq!(
            e.task,
            TaskRef {
                comm: "stress",
                pid: 40
            }
        );
        let EventKind::Switch {
            prev,
            prev_state,
            next,
            next_prio,
            ..
        } = e.kind
        else {
            panic!("{e:?}");
        };
        assert_eq!(
            (prev.pid, prev_state, next.comm, next_prio),
            (40, "R+", "irq/13-uart", 9)
        );
        // An IRQ entry while irq/13-uart runs: its task is named.
        let mut irq = Vec::from(13u32.to_le_bytes());
        irq.extend_from_slice(&(16u32 | (5 << 16)).to_le_bytes());
        irq.extend_from_slice(b"uart\0\0\0\0");
        let p = payload(225, 41, &irq);
        let e = d.decode(1, &raw(&p)).unwrap();
        assert_eq!(e.task.comm, "irq/13-uart");
        assert_eq!(
            e.kind,
            EventKind::IrqEntry {
                irq: 13,
                name: "uart"
            }
        );
        // An unknown id: other, its task named if known.
        let p = payload(9999, 41, &[]);
        let e = d.decode(1, &raw(&p)).unwrap();
        assert_eq!(e.kind, EventKind::Other { name: "" });
        let p = payload(9999, 77, &[]);
        assert_eq!(d.decode(1, &raw(&p)).unwrap().task.comm, "<...>");
    }

    #[test]
    fn states_as_the_text_prints_them() {
        assert_eq!(state_text(0), "R");
        assert_eq!(state_text(0x100), "R+");
        assert_eq!(state_text(1), "S");
        assert_eq!(state_text(2), "D");
        assert_eq!(state_text(0x80), "I");
    }

    #[test]
    fn short_payloads_are_errors_at_the_event() {
        let mut d = decoder();
        let p = switch(("a", 1), 1, ("b", 2));
        for n in [0, 3, 7, 30, p.len() - 1] {
            let e = d.decode(0, &raw(&p[..n])).unwrap_err();
            assert!(
                matches!(e, Error::BadTracePage { offset: 16, .. }),
                "{n}: {e:?}"
            );
        }
        let neg = switch(("a", 1), 1, ("b", u32::MAX));
        assert!(d.decode(0, &raw(&neg)).is_err());
    }

    #[test]
    fn from_a_page_to_events() {
        let mut d = decoder();
        let p = switch(("a", 1), 1, ("b", 2));
        let mut b = std::vec![0u8; 4096];
        let words = (p.len() / 4) as u32;
        b[8..16].copy_from_slice(&(4 + p.len() as u64).to_le_bytes());
        b[16..20].copy_from_slice(&(words | (3 << 5)).to_le_bytes());
        b[20..20 + p.len()].copy_from_slice(&p);
        let page = Page::new(PageHeader::LONG_8, &b).unwrap();
        let mut n = 0;
        for raw in page.events() {
            let raw = raw.unwrap();
            let e = d.decode(0, &raw).unwrap();
            assert_eq!((e.ts_ns, e.task.pid), (3, 1));
            n += 1;
        }
        assert_eq!(n, 1);
    }
}

//! The events the classifier reads, as their `format` files describe
//! them.

use super::fields::{find_field, Field};
use crate::explain::Name;
use crate::wire::bounded;
use crate::Error;

/// Most events an [`EventFormats`] holds: the seven below, and the
/// interrupt vectors' entries and exits (x86 has about twenty vectors).
pub const KNOWN: usize = 56;

/// The fields of one event the classifier reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// `irq:irq_handler_entry`.
    IrqEntry { irq: Field, name: Field },
    /// `irq:irq_handler_exit`.
    IrqExit { irq: Field },
    /// `irq:softirq_entry`.
    SoftirqEntry { vec: Field },
    /// `irq:softirq_exit`.
    SoftirqExit { vec: Field },
    /// `irq_vectors:<name>_entry`.
    VectorEntry { vector: Field },
    /// `irq_vectors:<name>_exit`.
    VectorExit { vector: Field },
    /// `sched:sched_switch`.
    Switch {
        prev_comm: Field,
        prev_pid: Field,
        prev_prio: Field,
        prev_state: Field,
        next_comm: Field,
        next_pid: Field,
        next_prio: Field,
    },
    /// `sched:sched_wakeup`.
    Wakeup {
        comm: Field,
        pid: Field,
        prio: Field,
    },
    /// `ftrace:print`, a `trace_marker` write.
    Print { buf: Field },
}

/// One event's id and fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Known {
    pub id: u16,
    /// A vector's name without `_entry` or `_exit`; the event's name
    /// otherwise.
    pub name: Name,
    pub shape: Shape,
}

/// The ids and field offsets of the events the classifier reads, learnt
/// from their `format` files; events of any other id decode as
/// [`EventKind::Other`](crate::explain::EventKind::Other).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventFormats {
    pub(crate) common_pid: Field,
    known: heapless::Vec<Known, KNOWN>,
}

impl Default for EventFormats {
    fn default() -> Self {
        Self::new()
    }
}

impl EventFormats {
    /// The events to enable, as paths under `events/`. Their format files,
    /// [`Self::MARKER`]'s, and those of every `irq_vectors/*_entry` and
    /// `*_exit` where that system exists (x86) are the ones to read.
    pub const ENABLE: [&'static str; 6] = [
        "irq/irq_handler_entry",
        "irq/irq_handler_exit",
        "irq/softirq_entry",
        "irq/softirq_exit",
        "sched/sched_switch",
        "sched/sched_wakeup",
    ];

    /// `trace_marker` writes: always recorded, so it has no `enable`.
    pub const MARKER: &'static str = "ftrace/print";

    /// No events known yet; `common_pid` where every kernel puts it.
    pub const fn new() -> Self {
        Self {
            common_pid: Field::fixed(4, 4, true),
            known: heapless::Vec::new(),
        }
    }

    /// Learns an event from its `format` file. Returns `Ok(false)` for an
    /// event the classifier does not read (nothing is kept).
    ///
    /// # Errors
    ///
    /// [`Error::BadTraceFormat`] if the file has no `name:` or `ID:`, an
    /// event the classifier reads lacks a field it reads, or more than
    /// [`KNOWN`] events are added.
    pub fn add(&mut self, format: &str) -> Result<bool, Error> {
        let line = |key: &str| {
            format
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .map(str::trim)
        };
        let name = line("name:").ok_or(Error::BadTraceFormat("format file without name:"))?;
        let id = line("ID:")
            .and_then(|v| v.parse::<u16>().ok())
            .ok_or(Error::BadTraceFormat("format file without a readable ID:"))?;
        let Some((label, shape)) = shape_of(name, format)? else {
            return Ok(false);
        };
        if let Some(pid) = find_field(format, "common_pid") {
            self.common_pid = pid;
        }
        let known = Known {
            id,
            name: bounded(label),
            shape,
        };
        if let Some(k) = self.known.iter_mut().find(|k| k.id == id) {
            *k = known;
        } else if self.known.push(known).is_err() {
            return Err(Error::BadTraceFormat(
                "more event formats than the decoder holds",
            ));
        }
        Ok(true)
    }

    /// How many events are known.
    pub fn len(&self) -> usize {
        self.known.len()
    }

    /// Whether no event is known yet.
    pub fn is_empty(&self) -> bool {
        self.known.is_empty()
    }

    /// The event of `id`, if it is one the classifier reads.
    pub(crate) fn find(&self, id: u16) -> Option<&Known> {
        self.known.iter().find(|k| k.id == id)
    }
}

/// Most fields one shape reads (`sched_switch`'s).
const MOST_FIELDS: usize = 7;

/// A shape from its fields, in the order [`SHAPES`] names them.
type Build = fn(&[Field; MOST_FIELDS]) -> Shape;

/// The events the classifier reads by name (but the vectors), the fields
/// each reads, and its shape from them.
const SHAPES: [(&str, &[&str], Build); 7] = [
    ("irq_handler_entry", &["irq", "name"], |f| Shape::IrqEntry {
        irq: f[0],
        name: f[1],
    }),
    ("irq_handler_exit", &["irq"], |f| Shape::IrqExit {
        irq: f[0],
    }),
    ("softirq_entry", &["vec"], |f| Shape::SoftirqEntry {
        vec: f[0],
    }),
    ("softirq_exit", &["vec"], |f| Shape::SoftirqExit {
        vec: f[0],
    }),
    (
        "sched_switch",
        &[
            "prev_comm",
            "prev_pid",
            "prev_prio",
            "prev_state",
            "next_comm",
            "next_pid",
            "next_prio",
        ],
        |f| Shape::Switch {
            prev_comm: f[0],
            prev_pid: f[1],
            prev_prio: f[2],
            prev_state: f[3],
            next_comm: f[4],
            next_pid: f[5],
            next_prio: f[6],
        },
    ),
    ("sched_wakeup", &["comm", "pid", "prio"], |f| {
        Shape::Wakeup {
            comm: f[0],
            pid: f[1],
            prio: f[2],
        }
    }),
    ("print", &["buf"], |f| Shape::Print { buf: f[0] }),
];

/// The shape of event `name` (and a vector's name), if the classifier
/// reads it.
fn shape_of<'a>(name: &'a str, format: &str) -> Result<Option<(&'a str, Shape)>, Error> {
    let Some((_, names, build)) = SHAPES.iter().find(|(n, ..)| *n == name) else {
        // An interrupt vector: `<name>_entry` or `_exit` with a `vector`
        // field, as the text parser reads them.
        let Some(vector) = find_field(format, "vector") else {
            return Ok(None);
        };
        return Ok(if let Some(v) = name.strip_suffix("_entry") {
            Some((v, Shape::VectorEntry { vector }))
        } else {
            name.strip_suffix("_exit")
                .map(|v| (v, Shape::VectorExit { vector }))
        });
    };
    let mut fields = [Field::fixed(0, 0, false); MOST_FIELDS];
    for (slot, field) in fields.iter_mut().zip(names.iter()) {
        *slot = find_field(format, field).ok_or(Error::BadTraceFormat(
            "an event's format lacks a field the classifier reads",
        ))?;
    }
    Ok(Some((name, build(&fields))))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An x86-64 kernel's (6.18) own `sched_switch` format.
    const SWITCH: &str = include_str!("fixtures/x86_64-6.18/sched_switch.format");

    #[test]
    fn learns_what_the_classifier_reads_and_nothing_else() {
        let mut f = EventFormats::new();
        assert_eq!(f.add(SWITCH), Ok(true));
        let k = f.find(372).unwrap();
        assert!(matches!(k.shape, Shape::Switch { next_prio, .. } if next_prio.offset == 60));
        let timer = "name: local_timer_entry\nID: 165\nformat:\n\tfield:int vector;\toffset:8;\tsize:4;\tsigned:1;\n";
        assert_eq!(f.add(timer), Ok(true));
        assert_eq!(f.find(165).unwrap().name, "local_timer");
        let other = "name: hrtimer_expire_entry\nID: 80\nformat:\n\tfield:void * hrtimer;\toffset:8;\tsize:8;\tsigned:0;\n";
        assert_eq!(f.add(other), Ok(false));
        assert_eq!(f.len(), 2);
        // Added again: replaced, not twice.
        assert_eq!(f.add(SWITCH), Ok(true));
        assert_eq!(f.len(), 2);
    }

    #[test]
    fn refuses_formats_without_what_it_reads() {
        let mut f = EventFormats::new();
        assert!(f.add("ID: 3\n").is_err());
        assert!(f.add("name: sched_switch\nID: x\n").is_err());
        let cut = SWITCH.replace("next_prio", "next_prio_gone");
        assert!(f.add(&cut).is_err());
        for i in 0..KNOWN {
            let v = std::format!(
                "name: v{i}_exit\nID: {i}\n\tfield:int vector;\toffset:8;\tsize:4;\tsigned:1;\n"
            );
            assert_eq!(f.add(&v), Ok(true));
        }
        let one_more =
            "name: w_exit\nID: 999\n\tfield:int vector;\toffset:8;\tsize:4;\tsigned:1;\n";
        assert!(f.add(one_more).is_err());
    }
}

//! The runs of a listening recorder, by run id. A run outlives its
//! connections: a target that reconnects (its link dropped, or this
//! recorder restarted) carries on in the same run and the same recording,
//! and frames it sends again are left out by their sequence numbers.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use super::lock;
use super::recordings::{self, RecordingFile};
use super::split::{newer, FrameRole, Peeked};
use super::targets::{TargetTable, TargetView};
use crate::budget::{Budget, Charge, SESSION_FIXED};
use crate::console;
use crate::error::{Error, Result};
use crate::session::Session;

/// How often a streaming run's view is republished.
const PUBLISH_EVERY: Duration = Duration::from_millis(250);

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// Its bye arrived.
    Bye,
    /// Nothing arrived for the idle timeout.
    TimedOut,
    /// The recorder was stopped (SIGINT, SIGTERM) first.
    Interrupted,
}

/// One run and its recording.
pub(crate) struct RecordedRun {
    /// Run id.
    pub id: u64,
    /// Board name.
    pub name: String,
    /// Peer address (IP) of its latest connection.
    pub peer: String,
    slot: u64,
    /// Its recording.
    store: RecordingFile,
    /// The decoding of everything durably recorded (dropped when the run
    /// ends).
    pub session: Option<Session>,
    /// Whether the last write or sync of the recording failed.
    failing: bool,
    /// Whether a failed write was said (once per run: a disk that is full
    /// fails and frees a little, again and again; the metric counts each).
    said_failing: bool,
    /// Resent frames left out.
    pub duplicates: u64,
    gen: u64,
    /// When the last frame arrived.
    pub last_frame: Instant,
    published: Instant,
    /// How it ended, once it did.
    pub ended: Option<Ending>,
    /// Its decoding's fixed part, charged to the connection that opened
    /// it.
    _charge: Charge,
}

/// A connection's hold on its run.
pub(crate) struct RunHold {
    /// The run.
    pub run: Arc<Mutex<RecordedRun>>,
    /// The connection's generation: a newer connection of the same run
    /// takes over, and the older one stops.
    pub gen: u64,
}

/// One frame (or junk) of a read, with what the peek found.
pub(crate) struct FrameSpan {
    /// Range of its bytes in the read's scratch buffer, delimiters included.
    pub range: std::ops::Range<usize>,
    /// Its sequence number and kind, if it decoded.
    pub peek: Option<Peeked>,
}

/// A write or sync of a run's recording that failed: the recorder stops
/// acknowledging, and closes the connection so that the target sends
/// what it holds again once it reconnects.
#[derive(Debug)]
pub(crate) struct WriteFailed {
    /// The error, naming the recording.
    pub error: Error,
    /// Whether it is the run's first (only that one is said).
    pub first: bool,
}

/// What taking a read's frames came to.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Intake {
    /// Sequence number to acknowledge.
    pub ack: Option<u32>,
    /// Items not taken because a hello of another run came first; the
    /// connection attaches to that run and goes on from there.
    pub rest_from: Option<usize>,
    /// The connection is no longer this run's (taken over, or ended).
    pub detached: bool,
}

impl RecordedRun {
    /// Take a read's items (their bytes in `bytes`): new frames are
    /// recorded, resent ones left out; what is durable is decoded and
    /// acknowledged.
    pub(crate) fn take(
        &mut self,
        gen: u64,
        items: &[FrameSpan],
        bytes: &[u8],
        out: &mut Vec<u8>,
    ) -> std::result::Result<Intake, WriteFailed> {
        let mut t = Intake::default();
        if self.gen != gen || self.session.is_none() {
            t.detached = true;
            return Ok(t);
        }
        out.clear();
        let mut last = self.store.written_seq();
        let mut now = false;
        for (i, it) in items.iter().enumerate() {
            let seg = &bytes[it.range.clone()];
            match &it.peek {
                Some(p) => {
                    match &p.kind {
                        FrameRole::Hello { run_id, .. } if *run_id != self.id => {
                            t.rest_from = Some(i);
                            break;
                        }
                        FrameRole::Bye => now = true,
                        _ => {}
                    }
                    if last.is_some_and(|l| !newer(p.seq, l)) {
                        self.duplicates += 1;
                        continue;
                    }
                    last = Some(p.seq);
                    out.extend_from_slice(seg);
                }
                // Not a frame this build decodes: recorded as it came.
                None => out.extend_from_slice(seg),
            }
        }
        if !items.is_empty() {
            self.last_frame = Instant::now();
        }
        if let Err(e) = self.store.append(out, last) {
            return Err(self.failed(e));
        }
        // The run's last frame is made durable at once: its target waits
        // for that acknowledgement to finish.
        if now || self.store.due() {
            self.sync()?;
        }
        t.ack = self.store.synced_seq();
        Ok(t)
    }

    /// Record the hello `seg` (frame `seq`) that starts a new recording,
    /// durably.
    fn start(&mut self, seg: &[u8], seq: u32) -> std::result::Result<(), WriteFailed> {
        if let Err(e) = self.store.append(seg, Some(seq)) {
            return Err(self.failed(e));
        }
        self.sync()
    }

    /// Make what was written durable and decode it.
    pub(crate) fn sync(&mut self) -> std::result::Result<(), WriteFailed> {
        match self.store.sync() {
            Ok(bytes) => {
                if let Some(s) = self.session.as_mut() {
                    s.feed(&bytes);
                    crate::evidence::write_beside(s, self.store.path());
                }
                if self.failing {
                    self.failing = false;
                    console::say(format_args!(
                        "run {:016x}: {} written again",
                        self.id,
                        self.store.path().display()
                    ));
                }
                Ok(())
            }
            Err(e) => Err(self.failed(e)),
        }
    }

    /// Whether written frames wait for a sync.
    pub(crate) fn dirty(&self) -> bool {
        self.store.dirty()
    }

    /// The sequence number of the last durable frame.
    pub(crate) fn durable_seq(&self) -> Option<u32> {
        self.store.synced_seq()
    }

    fn failed(&mut self, source: std::io::Error) -> WriteFailed {
        let first = !self.said_failing;
        self.failing = true;
        self.said_failing = true;
        WriteFailed {
            error: Error::Output {
                what: self.store.path().to_path_buf(),
                source,
            },
            first,
        }
    }

    /// Whether connection generation `gen` still holds the run.
    pub(crate) fn is_gen(&self, gen: u64) -> bool {
        self.gen == gen && self.session.is_some()
    }

    /// Whether the run's bye has been recorded.
    pub(crate) fn has_bye(&self) -> bool {
        self.session
            .as_ref()
            .and_then(|s| s.agg.current())
            .is_some_and(|r| r.bye.is_some())
    }

    /// The run's view for the live view and the metrics.
    pub(crate) fn view(&self, active: bool) -> TargetView {
        let label = self
            .store
            .path()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        match &self.session {
            Some(s) => TargetView::of(&label, &self.peer, s, active),
            None => TargetView::default(),
        }
    }
}

/// The fleet-wide settings of the runs.
#[derive(Debug, Clone)]
pub(crate) struct FleetOptions {
    /// Recordings directory.
    pub dir: PathBuf,
    /// How long an ended run's metrics stay.
    pub linger: Duration,
}

/// Every run of this recorder.
pub(crate) struct Fleet {
    /// What the live view and metrics show.
    pub targets: Arc<TargetTable>,
    /// FleetOptions.
    pub settings: FleetOptions,
    runs: Mutex<HashMap<u64, Arc<Mutex<RecordedRun>>>>,
    files: Mutex<HashMap<u64, PathBuf>>,
    /// The target table's slot of every run seen: a run that comes back after it ended
    /// replaces its lingering view instead of adding a second series with
    /// the same labels (Prometheus refuses a scrape with duplicates).
    slots: Mutex<HashMap<u64, u64>>,
    next_gen: AtomicU64,
    ended: Mutex<mpsc::Sender<u64>>,
    /// Set when the recorder is stopping.
    pub stopping: AtomicBool,
    /// The memory budget of all connections together.
    pub budget: Arc<Budget>,
}

impl Fleet {
    /// A fleet recording into `settings.dir`; run ids whose run ended are
    /// sent to `ended`.
    pub(crate) fn new(
        targets: Arc<TargetTable>,
        settings: FleetOptions,
        ended: mpsc::Sender<u64>,
    ) -> Fleet {
        let files = recordings::index(&settings.dir);
        Fleet {
            targets,
            settings,
            runs: Mutex::new(HashMap::new()),
            files: Mutex::new(files),
            slots: Mutex::new(HashMap::new()),
            next_gen: AtomicU64::new(1),
            ended: Mutex::new(ended),
            stopping: AtomicBool::new(false),
            budget: Budget::global(),
        }
    }

    /// Attach a connection from `peer` whose first frame `seg` (with its
    /// delimiters) is the hello `first`: to the run in memory, to its
    /// recording on disk, or to a new recording whose decoding is charged
    /// to the connection's `budget`. Returns the link and the sequence
    /// number to acknowledge; `None` if `first` is no hello.
    pub(crate) fn attach(
        &self,
        first: &Peeked,
        seg: &[u8],
        peer: &str,
        budget: &Arc<Budget>,
    ) -> Result<Option<(RunHold, Option<u32>)>> {
        let FrameRole::Hello { run_id, name, .. } = &first.kind else {
            return Ok(None);
        };
        let gen = self.next_gen.fetch_add(1, Ordering::Relaxed);
        let mut runs = lock(&self.runs);
        let run = match runs.get(run_id) {
            Some(r) => Arc::clone(r),
            None => {
                let rec = self.open_run(*run_id, (name, peer), first, seg, budget)?;
                let r = Arc::new(Mutex::new(rec));
                runs.insert(*run_id, Arc::clone(&r));
                self.warn_collision(&runs, *run_id, name, peer);
                r
            }
        };
        drop(runs);
        let mut g = lock(&run);
        g.gen = gen;
        g.peer = peer.to_string();
        g.last_frame = Instant::now();
        let ack = g.store.synced_seq();
        let view = g.view(true);
        let slot = g.slot;
        drop(g);
        self.targets.publish(slot, view);
        Ok(Some((RunHold { run, gen }, ack)))
    }

    /// The run's recording, reopened, or a new one that starts with the
    /// hello `seg`.
    fn open_run(
        &self,
        id: u64,
        (name, peer): (&str, &str),
        first: &Peeked,
        seg: &[u8],
        budget: &Arc<Budget>,
    ) -> Result<RecordedRun> {
        let charge = Charge::take(budget, SESSION_FIXED)
            .ok_or(crate::error::Error::Budget { run_id: id })?;
        let known = lock(&self.files).get(&id).cloned();
        let (store, session) = match known {
            Some(path) => {
                let r = recordings::resume(&path, Arc::clone(budget))?;
                console::say(format_args!(
                    "{peer}: run {id:016x} of {name} resumes {} after frame {}",
                    path.display(),
                    r.last_seq.map_or("none".into(), |s| s.to_string())
                ));
                let mut session = r.session;
                session.agg.keep_evidence();
                (r.store, session)
            }
            None => {
                let (file, path) = recordings::create(&self.settings.dir, name, id)?;
                lock(&self.files).insert(id, path.clone());
                let mut session =
                    Session::with_budget(path.display().to_string(), Arc::clone(budget));
                session.agg.keep_evidence();
                (RecordingFile::durable(file, path, 0, None), session)
            }
        };
        let mut rec = RecordedRun {
            id,
            name: name.to_string(),
            peer: peer.to_string(),
            slot: *lock(&self.slots)
                .entry(id)
                .or_insert_with(|| self.targets.slot()),
            store,
            session: Some(session),
            failing: false,
            said_failing: false,
            duplicates: 0,
            gen: 0,
            last_frame: Instant::now(),
            published: Instant::now(),
            ended: None,
            _charge: charge,
        };
        if rec.store.written_seq().is_none() {
            rec.start(seg, first.seq).map_err(|w| w.error)?;
        }
        Ok(rec)
    }

    fn warn_collision(
        &self,
        runs: &HashMap<u64, Arc<Mutex<RecordedRun>>>,
        id: u64,
        name: &str,
        peer: &str,
    ) {
        let others: Vec<String> = runs
            .iter()
            .filter(|(other, _)| **other != id)
            .filter_map(|(other, r)| {
                let r = lock(r);
                (r.ended.is_none() && r.name == name)
                    .then(|| format!("{other:016x} from {}", r.peer))
            })
            .collect();
        if let Some(first) = others.first() {
            console::say(format_args!(
                "warning: board name {name} of run {id:016x} from {peer} is also \
                 carried by {} other live run(s) (run {first}); told apart by run id and peer \
                 (give each board its own `latscope --name`)",
                others.len()
            ));
        }
    }

    /// After a read: publish the run's view now and then, and report its
    /// end when its bye was recorded.
    pub(crate) fn after_read(&self, run: &Arc<Mutex<RecordedRun>>) {
        let mut g = lock(run);
        let bye = g.ended.is_none() && g.has_bye();
        if bye {
            g.ended = Some(Ending::Bye);
        }
        if bye || g.published.elapsed() >= PUBLISH_EVERY {
            g.published = Instant::now();
            let (slot, view) = (g.slot, g.view(true));
            drop(g);
            self.targets.publish(slot, view);
            if bye {
                let id = lock(run).id;
                let _ = lock(&self.ended).send(id);
            }
        }
    }

    /// The connection `link` ended.
    pub(crate) fn detach(&self, link: &RunHold) {
        let g = lock(&link.run);
        if g.gen == link.gen && g.ended.is_none() {
            let (slot, view) = (g.slot, g.view(false));
            drop(g);
            self.targets.publish(slot, view);
        }
    }

    /// Runs that have had no frame for `idle`: they end, timed out.
    pub(crate) fn time_out(&self, idle: Duration) {
        for r in lock(&self.runs).values() {
            let mut g = lock(r);
            if g.ended.is_none() && g.last_frame.elapsed() >= idle {
                g.ended = Some(Ending::TimedOut);
                let _ = lock(&self.ended).send(g.id);
            }
        }
    }

    /// End every run that has not ended (the recorder is stopping).
    pub(crate) fn interrupt_all(&self) -> Vec<u64> {
        let mut ids = Vec::new();
        for r in lock(&self.runs).values() {
            let mut g = lock(r);
            if g.ended.is_none() {
                g.ended = Some(if g.has_bye() {
                    Ending::Bye
                } else {
                    Ending::Interrupted
                });
            }
            ids.push(g.id);
        }
        ids
    }

    /// Take an ended run out of the fleet: its final view lingers on the
    /// board, its memory goes. Returns its ending, session and recording.
    pub(crate) fn retire(&self, id: u64) -> Option<(Ending, Session, PathBuf)> {
        let r = lock(&self.runs).remove(&id)?;
        let mut g = lock(&r);
        let ending = g.ended.unwrap_or(Ending::Interrupted);
        // What is written and not yet durable: made so, or cut (and then
        // not in the final figures either).
        if let Err(w) = g.sync() {
            console::say(format_args!("run {id:016x}: {}", w.error));
        }
        let mut session = g.session.take()?;
        session.finish();
        let label = g
            .store
            .path()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut view = TargetView::of(&label, &g.peer, &session, false);
        view.finished = true;
        self.targets
            .publish_final(g.slot, view, self.settings.linger);
        Some((ending, session, g.store.path().to_path_buf()))
    }
}

//! The `report` subcommand as a library call: what the command line asked
//! for in a [`Plan`], in; the outputs written and the exit status, out.
//! The binary parses the command line and calls [`run`].

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use std::sync::Arc;

use latscope_core::slo::{worst, Goals, Outcome};
use latscope_core::wire::Platform;

use super::{render, say_incomplete, write_json, Decoded, Format, Options};
use crate::console;
use crate::error::{Error, Result, EXIT_FAILED, EXIT_GOAL_FAILED, EXIT_GOAL_INCONCLUSIVE, EXIT_OK};
use crate::input::{pump, Source};
use crate::plot;
use crate::session::Session;

/// What `report` was asked to do.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The inputs, in order (at most one of them standard input).
    pub sources: Vec<Source>,
    /// The format, and the options the formats share.
    pub options: Options,
    /// Also draw the plots into this file (.svg or .png).
    pub plot: Option<PathBuf>,
    /// Also write one self-contained HTML page of every run into this file.
    pub html: Option<PathBuf>,
    /// Write the report to this file instead of standard output.
    pub output: Option<PathBuf>,
    /// Decide latency goals, and where their verdicts go.
    pub slo: Option<SloPlan>,
}

/// `report --slo`: the goals, and the verdict files asked for.
#[derive(Debug, Clone)]
pub struct SloPlan {
    /// The goals and their confidence.
    pub goals: Arc<Goals>,
    /// JUnit XML to this file.
    pub junit: Option<PathBuf>,
    /// LAVA result lines to this file.
    pub lava: Option<PathBuf>,
    /// The JSON verdict document to this file.
    pub verdicts: Option<PathBuf>,
}

impl SloPlan {
    fn files(&self) -> impl Iterator<Item = &PathBuf> {
        self.junit.iter().chain(&self.lava).chain(&self.verdicts)
    }
}

/// The verdict files asked for, created before the inputs are read.
struct SloFiles<'p> {
    junit: Option<(&'p PathBuf, File)>,
    lava: Option<(&'p PathBuf, File)>,
    verdicts: Option<(&'p PathBuf, File)>,
}

impl<'p> SloFiles<'p> {
    fn create(s: &'p SloPlan) -> Result<Self> {
        let open = |p: &'p Option<PathBuf>| -> Result<Option<(&'p PathBuf, File)>> {
            p.as_ref().map(|p| Ok((p, create_out(p)?))).transpose()
        };
        Ok(SloFiles {
            junit: open(&s.junit)?,
            lava: open(&s.lava)?,
            verdicts: open(&s.verdicts)?,
        })
    }

    /// Write each file asked for.
    fn write(self, goals: &Goals, v: &[super::slo::RunVerdicts]) -> Result<()> {
        if let Some(f) = self.junit {
            write_out(Some(f), &super::slo::junit(goals, v))?;
        }
        if let Some(f) = self.lava {
            write_out(Some(f), &super::slo::lava(v))?;
        }
        if let Some(f) = self.verdicts {
            write_out(Some(f), &format!("{:#}\n", super::slo::json(goals, v)))?;
        }
        Ok(())
    }
}

/// Decode one input to its end (an endless one, standard input or a
/// serial line, until its run's bye).
pub(crate) fn decode(source: &Source) -> Result<Decoded> {
    decode_with(source, None)
}

/// [`decode`], counting the samples above the limits of `goals` in every thread.
fn decode_with(source: &Source, goals: Option<&Arc<Goals>>) -> Result<Decoded> {
    let mut r = source.open()?;
    let mut s = Session::new(source.name());
    if let Some(g) = goals {
        s.set_goals(Arc::clone(g));
    }
    let endless = source.endless();
    pump(&mut *r, |bytes| {
        s.feed(bytes);
        Ok(!(endless && s.agg.current().is_some_and(|r| r.bye.is_some())))
    })
    .map_err(|e| Error::Input {
        what: source.name(),
        source: e,
    })?;
    s.finish();
    Ok(Decoded {
        session: s,
        end: source.end_time(),
    })
}

/// An output file, created before the inputs are read (a bad path stops
/// the command at once, not after a long input).
pub(crate) fn create_out(path: &Path) -> Result<File> {
    File::create(path).map_err(|source| Error::Output {
        what: path.to_path_buf(),
        source,
    })
}

/// The report's text to `file` (created by [`create_out`]) or standard
/// output (a failure there is counted by [`console`]).
pub(crate) fn write_out(file: Option<(&PathBuf, File)>, text: &str) -> Result<()> {
    match file {
        Some((p, mut f)) => f
            .write_all(text.as_bytes())
            .map_err(|source| Error::Output {
                what: p.clone(),
                source,
            }),
        None => {
            console::Std::Out.write(text.as_bytes());
            Ok(())
        }
    }
}

/// The JSON report to `file` (created by [`create_out`]) or standard
/// output, written as it is serialised (a failure on standard output is
/// counted by [`console`]).
fn write_json_out(file: Option<(&PathBuf, File)>, decoded: &[Decoded]) -> Result<()> {
    match file {
        Some((p, f)) => {
            let mut w = BufWriter::with_capacity(64 * 1024, f);
            write_json(decoded, &mut w)
                .and_then(|()| w.flush())
                .map_err(|source| Error::Output {
                    what: p.clone(),
                    source,
                })
        }
        None => {
            let mut w = BufWriter::with_capacity(64 * 1024, console::Stdout);
            // a failed write is counted by console::Stdout, once: what is
            // still buffered is dropped, not written again
            if write_json(decoded, &mut w)
                .and_then(|()| w.flush())
                .is_err()
            {
                drop(w.into_parts());
            }
            Ok(())
        }
    }
}

/// `latscope-host report`: decode every input, write the report in the
/// plan's format (and the plots), and return the exit status: 0 when
/// every run is complete, 1 when an input could not be read or a run is
/// not (any cause of `completeness::losses`, each said on standard error). An error is returned
/// before any input is read when the outputs cannot be created or the
/// plan is not usable.
pub fn run(plan: &Plan) -> Result<u8> {
    if plan
        .sources
        .iter()
        .filter(|s| matches!(s, Source::Stdin))
        .count()
        > 1
    {
        return Err(Error::Usage("`-` (stdin) can be given only once".into()));
    }
    // the outputs before the inputs: a bad path fails at once
    let out = match &plan.output {
        Some(p) => Some((p, create_out(p)?)),
        None => None,
    };
    if let Some(file) = &plan.plot {
        plot::check(file)?;
    }
    let html = match &plan.html {
        Some(p) => Some((p, create_out(p)?)),
        None => None,
    };
    let slo_files = plan.slo.as_ref().map(SloFiles::create).transpose()?;
    let goals = plan.slo.as_ref().map(|s| &s.goals);
    let (decoded, mut code) = decode_all(&plan.sources, plan.options.format, goals);
    if decoded.is_empty() {
        // no run to draw or show: not an empty plot, page or verdict left
        let slo = plan.slo.iter().flat_map(SloPlan::files);
        for f in plan.plot.iter().chain(&plan.html).chain(slo) {
            let _ = std::fs::remove_file(f);
        }
        return Ok(EXIT_FAILED);
    }
    let verdicts = plan.slo.as_ref().map(|s| verdicts_of(&s.goals, &decoded));
    // the verdict table ends a text report, else goes to standard error
    let table = match (&plan.slo, &verdicts) {
        (Some(s), Some(v)) => v.iter().fold(String::new(), |mut t, r| {
            super::slo::text(&mut t, &s.goals, r);
            t
        }),
        _ => String::new(),
    };
    if plan.options.format == Format::Json {
        write_json_out(out, &decoded)?;
    } else {
        let mut text = render(&decoded, plan.options)?;
        if plan.options.format == Format::Text {
            text.push_str(&table);
        }
        write_out(out, &text)?;
    }
    if plan.options.format != Format::Text {
        console::Std::Err.write(table.as_bytes());
    }
    if let (Some(s), Some(v), Some(files)) = (&plan.slo, &verdicts, slo_files) {
        files.write(&s.goals, v)?;
    }
    if let Some(file) = &plan.plot {
        plot_runs(file, &decoded)?;
    }
    if let Some(file) = html {
        write_out(Some(file), &super::html::page(&decoded)?)?;
    }
    if !decoded
        .iter()
        .fold(true, |ok, d| say_incomplete(&d.session) & ok)
    {
        code = EXIT_FAILED;
    }
    Ok(match verdicts {
        Some(v) => goal_status(worst(v.iter().map(|r| r.outcome())), code),
        None => code,
    })
}

/// The exit status of goals (or a gate) whose verdict is `outcome`, read
/// with status `code` otherwise: a failed goal 5 over everything, then
/// `code`'s 1, then an inconclusive goal 6.
pub(crate) fn goal_status(outcome: Outcome, code: u8) -> u8 {
    match outcome {
        Outcome::Fail => EXIT_GOAL_FAILED,
        Outcome::Inconclusive if code == EXIT_OK => EXIT_GOAL_INCONCLUSIVE,
        _ => code,
    }
}

/// The verdicts of every run of every input.
fn verdicts_of(goals: &Goals, decoded: &[Decoded]) -> Vec<super::slo::RunVerdicts> {
    decoded
        .iter()
        .flat_map(|d| {
            let link = d.session.link();
            let name = d.session.name.clone();
            d.session
                .agg
                .runs
                .iter()
                .map(move |r| super::slo::of_run(&name, r, &link, goals))
        })
        .collect()
}

/// Decode every input; the readable ones, and 1 if any was not.
fn decode_all(
    sources: &[Source],
    format: Format,
    goals: Option<&Arc<Goals>>,
) -> (Vec<Decoded>, u8) {
    let mut code = EXIT_OK;
    let mut decoded = Vec::new();
    for s in sources {
        let d = match decode_with(s, goals) {
            Ok(d) => d,
            Err(e) => {
                console::say(&e);
                code = EXIT_FAILED;
                continue;
            }
        };
        if let Some(e) = d.session.fatal() {
            console::say(&e);
            code = EXIT_FAILED;
            continue;
        }
        if format != Format::Text {
            for w in d.session.warnings() {
                console::warn(&w);
            }
        }
        decoded.push(d);
    }
    (decoded, code)
}

/// `report --plot`: every run of every input in one figure.
fn plot_runs(file: &Path, decoded: &[Decoded]) -> Result<()> {
    let mut series = Vec::new();
    let mut title = Vec::new();
    for d in decoded {
        for run in &d.session.agg.runs {
            let prefix = if decoded.len() > 1 || d.session.agg.runs.len() > 1 {
                format!("{} ", run.hostname())
            } else {
                String::new()
            };
            series.extend(plot::run_series(run, &prefix));
            title.push(format!(
                "{} ({}, {})",
                run.hostname(),
                run.hello.target.arch,
                match run.hello.target.platform {
                    Platform::Linux => run.hello.target.kernel.to_string(),
                    Platform::BareMetal => super::text::model_line(&run.hello.target),
                }
            ));
        }
    }
    plot::draw(
        file,
        &format!("latscope: {}", title.join(", ")),
        &series,
        true,
    )?;
    console::say(format_args!("wrote {}", file.display()));
    Ok(())
}

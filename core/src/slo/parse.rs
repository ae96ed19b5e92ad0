//! The goal list's grammar:
//!
//! ```text
//! list      = condition *("," condition) ["@" confidence ["%"]]
//! condition = metric "<=" limit
//! metric    = "p" decimal | "max" | "missed" | "majflt"
//! limit     = decimal unit        ; p… and max: unit is ns, us, µs, ms or s
//!           | integer             ; missed and majflt: a count
//! ```
//!
//! Spaces around the parts are ignored. A quantile lies strictly between
//! p0 and p100, with at most four decimals; the confidence strictly
//! between 0 and 100 %, with at most four decimals too.

use super::{Goal, Goals, Metric};
use crate::stats::Ppm;
use crate::Error;

impl Goals {
    /// Read a goal list (the grammar above).
    ///
    /// # Errors
    /// [`Error::BadGoal`] naming what is wrong: an empty list or
    /// condition, a missing `<=`, an unknown metric, `p0` or `p100`, a
    /// limit without its unit or with an unknown one, a condition given
    /// twice, more than [`super::MAX_GOALS`] conditions, or a confidence
    /// of 0 or 100 % or outside them.
    pub fn parse(text: &str) -> Result<Goals, Error> {
        let (list, confidence) = match text.rsplit_once('@') {
            Some((list, c)) => (list, Some(c)),
            None => (text, None),
        };
        let mut goals = Goals::new();
        if let Some(c) = confidence {
            goals.confidence = parse_confidence(c)?;
        }
        if list.trim().is_empty() {
            return Err(Error::BadGoal(
                "no condition: write e.g. p99.9<=80us,max<=200us",
            ));
        }
        for cond in list.split(',') {
            let goal = parse_condition(cond.trim())?;
            if goals.goals.iter().any(|g| g.metric() == goal.metric()) {
                return Err(Error::BadGoal("a condition is given twice"));
            }
            goals
                .goals
                .push(goal)
                .map_err(|_| Error::BadGoal("more than 8 conditions"))?;
        }
        Ok(goals)
    }
}

fn parse_confidence(text: &str) -> Result<Ppm, Error> {
    let t = text.trim();
    let t = t.strip_suffix('%').unwrap_or(t).trim_end();
    let bad = Error::BadGoal("the confidence after @ is a percentage between 0 and 100, e.g. @95%");
    let ppm = scaled(t, 4).ok_or(bad)?;
    if ppm == 0 || ppm >= 1_000_000 {
        return Err(Error::BadGoal(
            "a confidence of 0 or 100 % decides nothing: give one between, e.g. @95%",
        ));
    }
    Ok(Ppm(ppm as u32))
}

fn parse_condition(cond: &str) -> Result<Goal, Error> {
    if cond.is_empty() {
        return Err(Error::BadGoal(
            "an empty condition (two commas, or one at an end)",
        ));
    }
    let Some((metric, limit)) = cond.split_once("<=") else {
        return Err(Error::BadGoal(
            "a condition is METRIC<=LIMIT, e.g. p99<=50us",
        ));
    };
    let metric = parse_metric(metric.trim())?;
    let limit = limit.trim();
    Ok(match metric {
        Metric::Quantile(q) => Goal::Quantile {
            q,
            limit_ns: parse_latency(limit)?,
        },
        Metric::Max => Goal::Max {
            limit_ns: parse_latency(limit)?,
        },
        Metric::Missed => Goal::Missed {
            limit: parse_count(limit)?,
        },
        Metric::Majflt => Goal::Majflt {
            limit: parse_count(limit)?,
        },
    })
}

fn parse_metric(text: &str) -> Result<Metric, Error> {
    match text {
        "max" => return Ok(Metric::Max),
        "missed" => return Ok(Metric::Missed),
        "majflt" => return Ok(Metric::Majflt),
        _ => {}
    }
    let unknown = Error::BadGoal("unknown metric: use pQ (e.g. p99.9), max, missed or majflt");
    let q = text.strip_prefix('p').ok_or(unknown)?;
    let ppm = scaled(q, 4).ok_or(Error::BadGoal(
        "a quantile is p and a percentage with at most 4 decimals, e.g. p99.99",
    ))?;
    match ppm {
        0 => Err(Error::BadGoal("p0 is the minimum: no goal")),
        1_000_000 => Err(Error::BadGoal("p100 is the maximum: write max<=LIMIT")),
        p if p > 1_000_000 => Err(Error::BadGoal("a quantile lies between p0 and p100")),
        p => Ok(Metric::Quantile(Ppm(p as u32))),
    }
}

fn parse_latency(text: &str) -> Result<u64, Error> {
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = (text[..split].trim(), text[split..].trim());
    let unit_ns: u64 = match unit {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "" => {
            return Err(Error::BadGoal(
                "a latency limit needs its unit: ns, us, ms or s",
            ))
        }
        _ => return Err(Error::BadGoal("unknown unit: use ns, us, ms or s")),
    };
    // at most 9 decimals: 1 s has 10^9 ns
    let scaled = scaled(number, 9).ok_or(Error::BadGoal(
        "a latency limit is a number and a unit, e.g. 80us or 0.5ms",
    ))?;
    let ns = scaled
        .checked_mul(u128::from(unit_ns))
        .ok_or(Error::BadGoal("a latency limit beyond 10^9 s"))?;
    if ns % 1_000_000_000 != 0 {
        return Err(Error::BadGoal("a latency limit finer than 1 ns"));
    }
    u64::try_from(ns / 1_000_000_000).map_err(|_| Error::BadGoal("a latency limit beyond 10^9 s"))
}

fn parse_count(text: &str) -> Result<u64, Error> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Error::BadGoal(
            "missed and majflt take a count, e.g. missed<=0",
        ));
    }
    // digits only, checked above: no str::parse instance for one count
    text.bytes().try_fold(0u64, |n, b| {
        n.checked_mul(10)
            .and_then(|n| n.checked_add(u64::from(b - b'0')))
            .ok_or(Error::BadGoal("a count beyond 2^64"))
    })
}

/// `text`, a decimal with at most `places` decimals, times `10^places`;
/// `None` if it is not one.
fn scaled(text: &str, places: u32) -> Option<u128> {
    let (int, frac) = match text.split_once('.') {
        Some((i, f)) => (i, f),
        None => (text, ""),
    };
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() || !digits(int) || !digits(frac) || frac.len() > places as usize {
        return None;
    }
    if text.ends_with('.') || int.len() > 20 {
        return None;
    }
    let int: u128 = int.parse().ok()?;
    let mut f: u128 = if frac.is_empty() {
        0
    } else {
        frac.parse().ok()?
    };
    for _ in frac.len()..places as usize {
        f *= 10;
    }
    int.checked_mul(10u128.pow(places))?.checked_add(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    fn err(text: &str) -> &'static str {
        match Goals::parse(text) {
            Err(Error::BadGoal(why)) => why,
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn the_issue_example_reads() {
        let g = Goals::parse("p99.9<=80us,max<=200us,missed<=0,majflt<=0@95%").unwrap();
        assert_eq!(
            g.goals(),
            [
                Goal::Quantile {
                    q: Ppm(999_000),
                    limit_ns: 80_000
                },
                Goal::Max { limit_ns: 200_000 },
                Goal::Missed { limit: 0 },
                Goal::Majflt { limit: 0 },
            ]
        );
        assert_eq!(g.confidence(), Ppm(950_000));
        assert_eq!(
            g.to_string(),
            "p99.9<=80us,max<=200us,missed<=0,majflt<=0@95%"
        );
    }

    #[test]
    fn units_spaces_and_confidence() {
        let g = Goals::parse(" p99.99 <= 0.5ms , p50<=1500ns, max <= 1s @ 99.5 ").unwrap();
        assert_eq!(g.to_string(), "p99.99<=500us,p50<=1500ns,max<=1s@99.5%");
        assert_eq!(g.confidence(), Ppm(995_000));
        assert_eq!(
            g.quantile_limits().collect::<std::vec::Vec<_>>(),
            [500_000, 1_500]
        );
        assert_eq!(Goals::parse("max<=7µs").unwrap().goals()[0].limit(), 7_000);
        assert_eq!(Goals::parse("max<=7us").unwrap().confidence(), Ppm(950_000));
    }

    #[test]
    fn bad_lists_are_named() {
        assert!(err("p100<=5us").contains("max<="));
        assert!(err("p0<=5us").contains("minimum"));
        assert!(err("p101<=5us").contains("between p0 and p100"));
        assert!(err("p99.99999<=5us").contains("4 decimals"));
        assert!(err("p99<=80").contains("needs its unit"));
        assert!(err("p99<=80uss").contains("unknown unit"));
        assert!(err("p99<=80min").contains("unknown unit"));
        assert!(err("p99<=80us,p99<=90us").contains("twice"));
        assert!(err("p99<=80us@0").contains("0 or 100"));
        assert!(err("p99<=80us@100%").contains("0 or 100"));
        assert!(err("p99<=80us@101").contains("0 or 100"));
        assert!(err("p99<=80us@high").contains("percentage"));
        assert!(err("").contains("no condition"));
        assert!(err("p99<=80us,").contains("empty condition"));
        assert!(err("p99=80us").contains("METRIC<=LIMIT"));
        assert!(err("avg<=80us").contains("unknown metric"));
        assert!(err("missed<=1us").contains("count"));
        assert!(err("max<=0.5ns").contains("finer than 1 ns"));
        assert!(err("max<=.5us").contains("number and a unit"));
        assert!(
            err("p1<=1us,p2<=1us,p3<=1us,p4<=1us,p5<=1us,p6<=1us,p7<=1us,p8<=1us,p9<=1us")
                .contains("more than 8")
        );
    }
}

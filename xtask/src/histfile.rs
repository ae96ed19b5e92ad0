//! cyclictest's histogram text (`-h N --histfile FILE`, or `-h N` on
//! standard output), as both cyclictest and latscope write it: rows
//! `%06d count...` of whole microseconds (each sample truncated), then
//! `# Min Latencies`, `# Max Latencies` and `# Histogram Overflows`.
//! Figures read from it quantize both programs alike.

use latscope_core::stats::{nearest_rank, Ppm};
use serde::{Deserialize, Serialize};

/// One thread's column.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// Samples per microsecond bucket, from 0, then one more element:
    /// the overflows. The quantiles rank over it as it is.
    ranked: Vec<u64>,
    /// `# Min Latencies`, µs.
    pub min: u64,
    /// `# Max Latencies`, µs.
    pub max: u64,
}

/// A parsed histogram file: one column per thread.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Histfile {
    /// The threads, in column order.
    pub columns: Vec<Column>,
}

/// The figures of a histogram file, µs: p50, p99, p99.9 and max of the
/// worse thread, min of the better, avg the mean of the threads' bucket
/// means (an overflow counted at its thread's max).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// The better thread's minimum.
    pub min: f64,
    /// The mean of the threads' means.
    pub avg: f64,
    /// The worse thread's p99.
    pub p99: f64,
    /// The worse thread's p99.9.
    pub p999: f64,
    /// The worse thread's maximum.
    pub max: f64,
    /// The worse thread's median.
    pub p50: f64,
}

impl Summary {
    /// The line the launchers keep: `min avg p99 p99.9 max p50`.
    pub fn line(&self) -> String {
        format!(
            "{:.1} {:.2} {:.1} {:.1} {:.1} {:.1}",
            self.min, self.avg, self.p99, self.p999, self.max, self.p50
        )
    }
}

fn numbers(rest: &str) -> Result<Vec<u64>, String> {
    rest.split_whitespace()
        .map(|v| v.parse().map_err(|_| format!("not a count: {v:?}")))
        .collect()
}

impl Histfile {
    /// Parse the text; other `#` lines are skipped.
    ///
    /// # Errors
    ///
    /// A row or a statistics line that is not numbers, with the line.
    pub fn parse(text: &str) -> Result<Histfile, String> {
        let mut rows: Vec<(usize, Vec<u64>)> = Vec::new();
        let (mut mins, mut maxs, mut ovs) = (Vec::new(), Vec::new(), Vec::new());
        for line in text.lines() {
            let err = |e: String| format!("{e} in {line:?}");
            if line.starts_with(|c: char| c.is_ascii_digit()) {
                let mut f = line.split_whitespace();
                let bucket = f.next().unwrap_or_default();
                let bucket: usize = bucket.parse().map_err(|_| err("not a bucket".into()))?;
                rows.push((
                    bucket,
                    numbers(&f.collect::<Vec<_>>().join(" ")).map_err(err)?,
                ));
            } else if let Some(rest) = line.strip_prefix("# Min Latencies:") {
                mins = numbers(rest).map_err(err)?;
            } else if let Some(rest) = line.strip_prefix("# Max Latencies:") {
                maxs = numbers(rest).map_err(err)?;
            } else if let Some(rest) = line.strip_prefix("# Histogram Overflows:") {
                ovs = numbers(rest).map_err(err)?;
            }
        }
        let mut counts: Vec<Vec<u64>> = vec![Vec::new(); maxs.len()];
        for (bucket, row) in rows {
            for (col, &c) in counts.iter_mut().zip(&row) {
                if col.len() <= bucket {
                    col.resize(bucket + 1, 0);
                }
                col[bucket] += c;
            }
        }
        let columns = counts
            .into_iter()
            .enumerate()
            .map(|(t, mut ranked)| {
                ranked.push(ovs.get(t).copied().unwrap_or(0));
                Column {
                    ranked,
                    min: mins.get(t).copied().unwrap_or(0),
                    max: maxs[t],
                }
            })
            .collect();
        Ok(Histfile { columns })
    }

    /// The figures; `None` without a `# Max Latencies` line.
    pub fn summary(&self) -> Option<Summary> {
        let cols = &self.columns;
        if cols.is_empty() {
            return None;
        }
        let worst = |q: Ppm| cols.iter().map(|c| c.quantile(q)).max().unwrap_or(0) as f64;
        let avg = cols.iter().map(Column::mean).sum::<f64>() / cols.len() as f64;
        Some(Summary {
            min: cols.iter().map(|c| c.min).min().unwrap_or(0) as f64,
            avg,
            p99: worst(Ppm::P99),
            p999: worst(Ppm::P999),
            max: cols.iter().map(|c| c.max).max().unwrap_or(0) as f64,
            p50: worst(Ppm::P50),
        })
    }
}

impl Column {
    /// Samples per microsecond bucket, from 0.
    pub fn counts(&self) -> &[u64] {
        &self.ranked[..self.ranked.len() - 1]
    }

    /// `# Histogram Overflows`: samples beyond the last bucket.
    pub fn overflows(&self) -> u64 {
        self.ranked[self.ranked.len() - 1]
    }

    /// The nearest-rank quantile, µs: its bucket, or the maximum when
    /// the rank falls among the overflows; 0 without samples.
    pub fn quantile(&self, q: Ppm) -> u64 {
        match nearest_rank(&self.ranked, q) {
            Some(i) if i < self.counts().len() => i as u64,
            Some(_) => self.max,
            None => 0,
        }
    }

    /// The mean of the buckets, an overflow counted at the maximum; 0
    /// without samples.
    pub fn mean(&self) -> f64 {
        let n: u64 = self.ranked.iter().sum();
        if n == 0 {
            return 0.0;
        }
        let sum: f64 = self
            .counts()
            .iter()
            .enumerate()
            .map(|(b, &c)| b as f64 * c as f64)
            .sum::<f64>()
            + self.overflows() as f64 * self.max as f64;
        sum / n as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real cyclictest 2.10 histogram, two threads (the core's fixture).
    const REAL: &str =
        include_str!("../../core/src/cyclictest/fixtures/cyclictest-2.10-q-H100-t2.txt");

    #[test]
    fn parses_a_real_cyclictest_histogram() {
        // `-H`: the two threads' columns, then their sum
        let h = Histfile::parse(REAL).expect("parse");
        assert_eq!(h.columns.len(), 3);
        let (a, b, total) = (&h.columns[0], &h.columns[1], &h.columns[2]);
        for (i, &n) in total.counts().iter().enumerate() {
            let at = |c: &Column| c.counts().get(i).copied().unwrap_or(0);
            assert_eq!(n, at(a) + at(b), "bucket {i}: the total column is the sum");
        }
        assert_eq!(total.overflows(), a.overflows() + b.overflows());
        assert_eq!(total.max, a.max.max(b.max));
        for c in [a, b] {
            let first = c.counts().iter().position(|&n| n > 0).expect("a bucket");
            assert_eq!(first as u64, c.min, "the first bucket is the minimum");
        }
        let s = h.summary().expect("summary");
        assert!(
            s.min <= s.p50 && s.p50 <= s.p99 && s.p99 <= s.p999 && s.p999 <= s.max,
            "{s:?}"
        );
        assert_eq!(s.max, 171.0);
        assert_eq!(
            s.p999, 171.0,
            "27 overflows of about 2000 samples: p99.9 is the max"
        );
    }

    #[test]
    fn summary_figures_from_known_counts() {
        let text = "000000 0 0\n000001 50 10\n000002 45 10\n000003 4 0\n000004 1 0\n\
                    # Total: 000000100 000000021\n# Min Latencies: 00001 00001\n\
                    # Avg Latencies: 00001 00002\n# Max Latencies: 00004 00090\n\
                    # Histogram Overflows: 00000 00001\n";
        let s = Histfile::parse(text)
            .expect("parse")
            .summary()
            .expect("summary");
        // thread 1: 100 samples; rank 50 in bucket 1, 99 in 3, 100 in 4
        // thread 2: 21 samples, one overflow: rank 21 (p99) is the max, 90
        assert_eq!(s.p50, 2.0, "thread 2's rank 11 is in bucket 2");
        assert_eq!(s.p99, 90.0);
        assert_eq!(s.p999, 90.0);
        assert_eq!(s.max, 90.0);
        assert_eq!(s.min, 1.0);
        let t1 = (50.0 + 90.0 + 12.0 + 4.0) / 100.0;
        let t2 = (10.0 + 20.0 + 90.0) / 21.0;
        assert!((s.avg - (t1 + t2) / 2.0).abs() < 1e-12, "{}", s.avg);
        assert_eq!(
            s.line(),
            format!("1.0 {:.2} 90.0 90.0 90.0 2.0", (t1 + t2) / 2.0)
        );
    }

    #[test]
    fn bad_rows_are_errors_and_no_columns_no_summary() {
        assert!(Histfile::parse("000001 5 x\n").is_err());
        assert!(Histfile::parse("# Max Latencies: 0000a\n").is_err());
        assert_eq!(
            Histfile::parse("000001 5\n").expect("parse").summary(),
            None
        );
    }
}

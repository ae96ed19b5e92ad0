//! `report --html FILE`: one self-contained page to hand a colleague. Per
//! run: whether it is complete, its identity (the text report's header), the
//! summary tables, the plots (inline SVG) and the spikes with their
//! causes. It fetches nothing: a content-security policy of
//! `default-src 'none'` that allows only its own style sheet (by hash; no
//! script at all), and no URL in the page; it reads on a phone (tables
//! scroll, plots scale) and printed.

use std::fmt::Write;

use latscope_core::wire::LinkStats;

use super::{completeness, markup, text, Decoded};
use crate::aggregate::Run;
use crate::error::Result;
use crate::plot;
use crate::summary::{avg_us, or_dash, summarize, us_opt, Summary, QUANTILES};

/// The page's style: readable on a phone-sized window, and printed.
const STYLE: &str = "\
:root{color-scheme:light}
body{font:15px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:0 auto;padding:1em;max-width:1100px;color:#1a1a1a}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.25em;margin:1.4em 0 .4em;border-bottom:1px solid #ccc}
h3{font-size:1.05em;margin:1em 0 .3em}
.completeness{padding:.5em .8em;border-radius:4px;margin:.5em 0}
.complete{background:#e6f4ea;border:1px solid #34a853}.incomplete{background:#fce8e6;border:1px solid #d93025}
.scroll{overflow-x:auto}
table{border-collapse:collapse;font-variant-numeric:tabular-nums;margin:.3em 0}
th,td{padding:.2em .6em;text-align:right;white-space:nowrap;border-bottom:1px solid #e3e3e3}
th:first-child,td:first-child{text-align:left}
pre{font-size:13px;background:#f6f6f6;padding:.6em;overflow-x:auto;white-space:pre}
figure{margin:.6em 0}svg{display:block;width:100%;height:auto}
footer{margin-top:2em;font-size:.85em;color:#555}
@media print{body{max-width:none;padding:0;font-size:12px}.scroll,pre{overflow:visible}pre{white-space:pre-wrap;overflow-wrap:anywhere;font-size:10px}th,td{padding:.1em .3em;font-size:10px}figure,table{break-inside:avoid}h2{break-after:avoid}}
";

/// The CSP hash of the `<style>` element's text (a newline, then
/// [`STYLE`]): a change to the style sheet changes it. Chromium refuses a
/// sheet whose hash is not this one and logs an error that names the
/// right one; `tests/tests/html_report.rs` fails on that error.
const STYLE_HASH: &str = "sha256-by0lze+t8xg9PIF0CXhlwAoSa+EUz4yducuD6gek9ZI=";

/// The page of every run of `decoded`.
pub(crate) fn page(decoded: &[Decoded]) -> Result<String> {
    let runs: Vec<(&str, &Run, LinkStats)> = decoded
        .iter()
        .flat_map(|d| {
            let link = d.session.link();
            let name = d.session.name.as_str();
            d.session.agg.runs.iter().map(move |r| (name, r, link))
        })
        .collect();
    let title = match runs.as_slice() {
        [(_, r, _)] => format!("latscope: {} run {:016x}", r.hostname(), r.hello.run_id),
        _ => format!("latscope: {} runs", runs.len()),
    };
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src '{STYLE_HASH}'\">\n\
         <title>{}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
        markup(&title),
        markup(&title)
    );
    for (i, (name, run, link)) in runs.iter().enumerate() {
        section(&mut out, i, name, run, link)?;
    }
    let _ = write!(
        out,
        "<footer>Written by latscope-host {} (report --html). The figures are in µs unless \
         a column says otherwise.</footer>\n</body>\n</html>\n",
        env!("CARGO_PKG_VERSION")
    );
    Ok(out)
}

/// One run's section.
fn section(out: &mut String, i: usize, name: &str, run: &Run, link: &LinkStats) -> Result<()> {
    let _ = writeln!(
        out,
        "<section class=\"run\" id=\"run-{i}\">\n<h2>{} · run {:016x}</h2>",
        markup(run.hostname()),
        run.hello.run_id
    );
    let losses = completeness::losses(run, link);
    if losses.is_empty() {
        let _ = writeln!(
            out,
            "<p class=\"completeness complete\"><strong>Complete</strong>: nothing of the run was lost.</p>"
        );
    } else {
        let _ = writeln!(
            out,
            "<div class=\"completeness incomplete\"><strong>Incomplete</strong>:<ul>"
        );
        for l in &losses {
            let _ = writeln!(out, "<li>{}</li>", markup(&l.message()));
        }
        let _ = writeln!(out, "</ul></div>");
    }
    let mut head = String::new();
    text::header(&mut head, name, run, link);
    let _ = writeln!(
        out,
        "<h3>The run</h3>\n<pre class=\"identity\">{}</pre>",
        markup(head.trim_end())
    );
    let (per, all) = summarize(run);
    let mut rows: Vec<&Summary> = per.iter().collect();
    rows.push(&all);
    figures_table(out, &rows);
    shape_table(out, &rows);
    let series = plot::run_series(run, "");
    let svg = plot::svg(&format!("{} ({})", run.hostname(), name), &series, true)?;
    let _ = writeln!(
        out,
        "<h3>Plots</h3>\n<figure class=\"plot\">{}<figcaption>Histogram, tail and max latency per report interval, per CPU.</figcaption></figure>",
        inline(&svg, "latency histogram, tail and max per interval")
    );
    let mut spikes = String::new();
    text::spikes(&mut spikes, run);
    if !spikes.trim().is_empty() {
        let _ = writeln!(
            out,
            "<h3>Spikes</h3>\n<pre class=\"spikes\">{}</pre>",
            markup(spikes.trim())
        );
    }
    let mut explained = String::new();
    text::explained(&mut explained, run);
    if !explained.trim().is_empty() {
        // the causes over all spikes first, then each spike's
        let (each, totals) = match explained.find("causes over all explained spikes") {
            Some(at) => explained.split_at(at),
            None => (explained.as_str(), ""),
        };
        let _ = writeln!(out, "<h3>Explained spikes</h3>");
        if !totals.is_empty() {
            let _ = writeln!(out, "<pre class=\"causes\">{}</pre>", markup(totals.trim()));
        }
        let _ = writeln!(
            out,
            "<pre class=\"explained\">{}</pre>",
            markup(each.trim())
        );
    }
    let _ = writeln!(out, "</section>");
    Ok(())
}

/// A table's header cells and rows into `out`, in a scrolling box.
fn table(out: &mut String, class: &str, head: &[String], rows: &[Vec<String>]) {
    let _ = write!(
        out,
        "<div class=\"scroll\"><table class=\"{class}\"><thead><tr>"
    );
    for h in head {
        let _ = write!(out, "<th>{}</th>", markup(h));
    }
    let _ = write!(out, "</tr></thead><tbody>");
    for r in rows {
        let _ = write!(out, "<tr>");
        for c in r {
            let _ = write!(out, "<td>{}</td>", markup(c));
        }
        let _ = write!(out, "</tr>");
    }
    let _ = writeln!(out, "</tbody></table></div>");
}

/// The text report's first table: latencies and quantiles (µs).
fn figures_table(out: &mut String, rows: &[&Summary]) {
    let mut head: Vec<String> = ["thread", "CPU", "prio", "cycles", "min", "avg"]
        .map(String::from)
        .to_vec();
    head.extend(QUANTILES.iter().map(|(_, n)| n.to_string()));
    head.push("max".into());
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|s| {
            let mut r = vec![
                s.label.clone(),
                or_dash(s.cpu),
                or_dash(s.priority),
                s.cycles.to_string(),
            ];
            if s.count == 0 {
                r.extend(std::iter::repeat_n(String::new(), head.len() - r.len() - 1));
                r.push("no samples".into());
                return r;
            }
            r.push(us_opt(s.min_ns));
            r.push(avg_us(s.avg_ns));
            r.extend(s.quantiles.iter().map(|(_, v)| us_opt(*v)));
            r.push(us_opt(s.max_ns));
            r
        })
        .collect();
    let _ = writeln!(out, "<h3>Latency (µs)</h3>");
    table(out, "figures", &head, &body);
}

/// The text report's second table: the distribution's shape (µs) and the
/// counts.
fn shape_table(out: &mut String, rows: &[&Summary]) {
    let head: Vec<String> = [
        "thread", "median", "mode", "MAD", "stddev", "missed", "early", "minflt", "majflt",
        "dropped", "spikes", "exact",
    ]
    .map(String::from)
    .to_vec();
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|s| {
            let mut r = vec![s.label.clone()];
            if s.count == 0 {
                r.extend(["", "", ""].map(String::from));
                r.push("no samples".into());
            } else {
                r.push(us_opt(s.median_ns));
                r.push(us_opt(s.mode_ns));
                r.push(format!("{:.1}", s.mad_ns / 1000.0));
                r.push(format!("{:.1}", s.stddev_ns / 1000.0));
            }
            for n in [s.missed, s.early, s.minflt, s.majflt, s.dropped, s.spikes] {
                r.push(n.to_string());
            }
            r.push(if s.exact { "yes" } else { "no" }.into());
            r
        })
        .collect();
    let _ = writeln!(out, "<h3>Shape and counts</h3>");
    table(out, "shape", &head, &body);
}

/// An SVG document as an element of the page: no XML namespace (HTML
/// needs none, and the page holds no URL), scaled by its view box.
fn inline(svg: &str, label: &str) -> String {
    let Some(end) = svg.find('>') else {
        return String::new();
    };
    let open = &svg[..end];
    let view_box = open
        .split("viewBox=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap_or("0 0 1200 1350");
    format!(
        "<svg viewBox=\"{view_box}\" role=\"img\" aria-label=\"{}\">{}",
        markup(label),
        &svg[end + 1..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::Session;
    use crate::synth::{Synth, SynthConfig};

    fn decoded(cfg: SynthConfig) -> Decoded {
        let (bytes, _) = Synth::bytes(cfg);
        let mut s = Session::new("synth.lsr");
        s.feed(&bytes);
        s.finish();
        Decoded {
            session: s,
            end: std::time::SystemTime::now(),
        }
    }

    #[test]
    fn the_page_holds_no_url_and_no_script() {
        let d = decoded(SynthConfig {
            hostname: "<b>&\"lab\"".into(),
            ..SynthConfig::default()
        });
        let page = page(std::slice::from_ref(&d)).unwrap();
        assert!(!page.contains("://"), "a URL in the page");
        assert!(!page.contains(" href=") && !page.contains(" src="));
        assert!(!page.contains("<script"));
        assert!(page.contains("default-src 'none'"));
        // the host name is text, not markup
        assert!(page.contains("&lt;b&gt;&amp;&quot;lab&quot;"));
        assert!(!page.contains("<b>&"));
        assert_eq!(page.matches("<svg ").count(), 1);
        assert!(page.contains("<p class=\"completeness complete\">"));
    }

    #[test]
    fn an_incomplete_run_says_why() {
        let d = decoded(SynthConfig {
            bye: false,
            ..SynthConfig::default()
        });
        let page = page(std::slice::from_ref(&d)).unwrap();
        assert!(page.contains("completeness incomplete"), "{page}");
        assert!(page.contains("<li>no bye"), "{page}");
    }

    #[test]
    fn svg_is_inlined_without_its_namespace_and_scales() {
        let s = "<svg width=\"1200\" height=\"900\" viewBox=\"0 0 1200 900\" xmlns=\"http://www.w3.org/2000/svg\">\n<rect/></svg>";
        assert_eq!(
            inline(s, "a \"plot\""),
            "<svg viewBox=\"0 0 1200 900\" role=\"img\" aria-label=\"a &quot;plot&quot;\">\n<rect/></svg>"
        );
    }
}

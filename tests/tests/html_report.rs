//! `latscope-host report --html` opened in Debian's chromium, headless,
//! as a colleague would open the file: no console or log error (a
//! blocked fetch under the page's `default-src 'none'` is one), every
//! plot laid out with a non-zero box, the summary tables equal to the
//! text report's, and on a phone-sized window and printed the page does
//! not overflow its width. Screenshots are kept in the target directory's
//! `test-artefacts/`.

use std::path::Path;

use latscope_host::synth::{Synth, SynthConfig};
use latscope_testkit::chromium::{artefacts, Browser};
use latscope_testkit::host::host;
use latscope_testkit::{have, require, workspace_root, Scratch};
use serde_json::Value;

/// What the test reads back from the page's DOM.
const PROBE: &str = "(() => {
  const cells = sel => [...document.querySelectorAll(sel)]
    .map(tr => [...tr.cells].map(td => td.textContent.trim()));
  return {
    plots: [...document.querySelectorAll('figure.plot svg')]
      .map(e => { const r = e.getBoundingClientRect(); return [r.width, r.height]; }),
    figures: cells('table.figures tbody tr'),
    shape: cells('table.shape tbody tr'),
    completeness: (document.querySelector('.completeness') || {}).textContent || '',
    causes: (document.querySelector('pre.causes') || {}).textContent || '',
    explained: (document.querySelector('pre.explained') || {}).textContent || '',
    scroll_width: document.documentElement.scrollWidth,
    inner_width: window.innerWidth,
  };
})()";

fn s(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// The rows of a text report's table whose header line starts with
/// `head`: each row's whitespace-separated fields, up to the blank line.
fn text_table(report: &str, head: &str) -> Vec<Vec<String>> {
    report
        .lines()
        .skip_while(|l| !l.starts_with(head))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(String::from).collect())
        .collect()
}

/// `report FILE` as text, and `report FILE --html PAGE`: the text.
fn reports(rec: &Path, page: &Path) -> String {
    let text = host(&["report", s(rec)]);
    let html = host(&["report", s(rec), "--html", s(page)]);
    assert_eq!(text.status.code(), html.status.code(), "{html:?}");
    String::from_utf8(text.stdout).expect("UTF-8 report")
}

fn rows(v: &Value) -> Vec<Vec<String>> {
    serde_json::from_value(v.clone()).expect("rows of cells")
}

/// Open `page`, check it as a desktop window, a phone and printed, and
/// keep screenshots named after `tag`; what the desktop read back.
fn check_page(dir: &Path, page: &Path, tag: &str) -> Value {
    let html = std::fs::read_to_string(page).unwrap();
    assert!(!html.contains("://"), "a URL in the page");
    let mut b = Browser::launch(dir);
    b.viewport(1200, 900, false);
    b.open(page);
    let desk = b.eval(PROBE);
    let errors = b.errors();
    assert!(errors.is_empty(), "errors in chromium: {errors:#?}");
    let plots = desk["plots"].as_array().expect("plots").clone();
    assert!(!plots.is_empty(), "no plot in the page");
    for p in &plots {
        let (w, h) = (p[0].as_f64().unwrap(), p[1].as_f64().unwrap());
        assert!(w > 500.0 && h > 500.0, "a plot of {w} x {h} px");
    }
    let keep = artefacts();
    b.screenshot(&keep.join(format!("html-report-{tag}.png")));

    // a phone: nothing wider than the window; plots scaled into it
    b.viewport(390, 844, true);
    let phone = b.eval(PROBE);
    let (sw, iw) = (
        phone["scroll_width"].as_f64().unwrap(),
        phone["inner_width"].as_f64().unwrap(),
    );
    assert!(sw <= iw, "the page is {sw} px wide in a {iw} px window");
    for p in phone["plots"].as_array().unwrap() {
        let w = p[0].as_f64().unwrap();
        assert!(
            w > 300.0 && w <= iw,
            "a plot {w} px wide on a {iw} px phone"
        );
    }
    b.screenshot(&keep.join(format!("html-report-{tag}-phone.png")));

    // printed: laid out for paper, and a PDF comes out
    b.viewport(794, 1123, false);
    b.media("print");
    let paper = b.eval(PROBE);
    assert!(
        paper["scroll_width"].as_f64() <= paper["inner_width"].as_f64(),
        "printed, the page overflows: {paper}"
    );
    let pdf = b.print();
    assert!(
        pdf.starts_with(b"%PDF-") && pdf.len() > 10_000,
        "{} bytes of PDF",
        pdf.len()
    );

    let errors = b.errors();
    assert!(
        errors.is_empty(),
        "errors in chromium: {errors:#?}\nall: {:#?}",
        b.messages()
    );
    desk
}

#[test]
fn the_html_report_opens_in_chromium_with_the_text_reports_figures() {
    require!(have("chromium"), "chromium (Debian's package)");
    let dir = Scratch::new("html-report");
    let rec = workspace_root().join("tests/golden/v2/v2-explain.lsr");
    let page = dir.join("report.html");
    let text = reports(&rec, &page);
    let desk = check_page(dir.path(), &page, "explain");

    // the summary tables, cell by cell, are the text report's
    let figures = text_table(&text, "thread  CPU");
    let shape = text_table(&text, "thread    median");
    assert!(figures.len() >= 2, "{text}");
    assert_eq!(rows(&desk["figures"]), figures, "{text}");
    assert_eq!(rows(&desk["shape"]), shape, "{text}");
    assert!(
        desk["completeness"]
            .as_str()
            .unwrap()
            .starts_with("Complete"),
        "{desk}"
    );
    // the causes over all explained spikes, then each spike with its own
    let causes = desk["causes"].as_str().unwrap();
    let top = text
        .lines()
        .find(|l| l.starts_with("causes over all explained spikes"))
        .expect("the text report's causes");
    assert!(causes.starts_with(top), "{top} not first in {causes}");
    let explained = desk["explained"].as_str().unwrap();
    let first = text
        .lines()
        .skip_while(|l| !l.starts_with("explained spikes"))
        .nth(1)
        .expect("the text report's first explained spike");
    assert!(
        explained.contains(first.trim()),
        "{first} not in {explained}"
    );
}

#[test]
fn an_incomplete_run_says_so_at_the_top_of_its_page() {
    require!(have("chromium"), "chromium (Debian's package)");
    let dir = Scratch::new("html-report-cut");
    let rec = dir.join("cut.lsr");
    let mut bytes = Vec::new();
    Synth::new(SynthConfig {
        bye: false,
        ..SynthConfig::default()
    })
    .run(&mut |b| bytes.extend_from_slice(b));
    std::fs::write(&rec, bytes).unwrap();
    let page = dir.join("cut.html");
    let text = reports(&rec, &page);
    let desk = check_page(dir.path(), &page, "incomplete");
    let completeness = desk["completeness"].as_str().unwrap();
    assert!(completeness.starts_with("Incomplete"), "{completeness}");
    assert!(completeness.contains("no bye"), "{completeness}");
    assert_eq!(rows(&desk["figures"]), text_table(&text, "thread  CPU"));
}

/// An input with no run: exit status 1, said in one line, and no empty
/// page or plot left behind.
#[test]
fn an_input_without_a_run_leaves_no_page_or_plot() {
    let dir = Scratch::new("html-report-none");
    let junk = dir.join("junk.lsr");
    std::fs::write(&junk, vec![0x5a; 4096]).unwrap();
    let (page, png) = (dir.join("junk.html"), dir.join("junk.png"));
    let out = host(&["report", s(&junk), "--html", s(&page), "--plot", s(&png)]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a latscope stream"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!page.exists() && !png.exists());
}

//! Debian's chromium, headless, driven over the DevTools protocol on a
//! pipe (`--remote-debugging-pipe`: JSON messages ended by a NUL byte, on
//! the browser's descriptors 3 and 4, here two named pipes): open a page,
//! read back its DOM's geometry, collect every console and log message,
//! take screenshots and print it. No network: the browser starts with
//! background networking off and a fresh profile of its own. Its own log
//! (`--enable-logging=stderr`) goes to `chromium.log` beside the profile,
//! kept with a failed test's scratch directory.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::base64::decode;

/// How long one protocol call may take before the test fails.
const CALL_LIMIT: Duration = Duration::from_secs(60);

/// A headless chromium with one page, attached.
pub struct Browser {
    child: Child,
    to: File,
    from: Receiver<Value>,
    next_id: u64,
    session: String,
    /// Every event the browser sent so far (`method`, `params`).
    pub events: Vec<Value>,
}

impl Browser {
    /// Start chromium with its profile in `dir` (fresh), open `about:blank`
    /// and attach to it with the runtime, the log and page events on.
    ///
    /// # Panics
    ///
    /// When chromium cannot be started or does not answer.
    pub fn launch(dir: &Path) -> Browser {
        let (to_path, from_path) = (dir.join("cdp-in"), dir.join("cdp-out"));
        for p in [&to_path, &from_path] {
            let ok = Command::new("mkfifo")
                .arg(p)
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "mkfifo {}", p.display());
        }
        let profile = dir.join("profile");
        // the shell opens the pipes as 3 and 4 and becomes chromium
        let child = Command::new("sh")
            .arg("-c")
            .arg(
                "exec chromium --headless --no-sandbox --disable-gpu \
                  --disable-background-networking --no-first-run --enable-logging=stderr \
                  --user-data-dir=\"$1\" --remote-debugging-pipe about:blank \
                  3<\"$2\" 4>\"$3\"",
            )
            .arg("sh")
            .arg(&profile)
            .arg(&to_path)
            .arg(&from_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create(dir.join("chromium.log")).expect("chromium's log"))
            .spawn()
            .expect("start chromium");
        // in the shell's order: its 3 (our writes), then its 4
        let to = OpenOptions::new()
            .write(true)
            .open(&to_path)
            .expect("open the pipe to chromium");
        let from = File::open(&from_path).expect("open the pipe from chromium");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(from);
            loop {
                let mut buf = Vec::new();
                match r.read_until(0, &mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        buf.pop();
                        let Ok(v) = serde_json::from_slice::<Value>(&buf) else {
                            continue;
                        };
                        if tx.send(v).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        let mut b = Browser {
            child,
            to,
            from: rx,
            next_id: 1,
            session: String::new(),
            events: Vec::new(),
        };
        let target = b.browser_call("Target.createTarget", json!({ "url": "about:blank" }));
        let id = target["targetId"]
            .as_str()
            .expect("a target id")
            .to_string();
        let attached = b.browser_call(
            "Target.attachToTarget",
            json!({ "targetId": id, "flatten": true }),
        );
        b.session = attached["sessionId"]
            .as_str()
            .expect("a session")
            .to_string();
        for domain in ["Runtime.enable", "Log.enable", "Page.enable"] {
            b.call(domain, json!({}));
        }
        b
    }

    fn send(&mut self, method: &str, params: Value, session: Option<&str>) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&msg).expect("a message");
        bytes.push(0);
        self.to.write_all(&bytes).expect("write to chromium");
        let v = self.next_until(&format!("the answer to {method}"), |v| {
            v["id"].as_u64() == Some(id)
        });
        assert!(v.get("error").is_none(), "{method}: {}", v["error"]);
        v["result"].clone()
    }

    /// Read messages until one satisfies `wanted`, within [`CALL_LIMIT`],
    /// keeping every event read meanwhile (and the wanted one, if an event)
    /// in [`Browser::events`]; that message.
    fn next_until(&mut self, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + CALL_LIMIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self
                .from
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("chromium: no {what} within {CALL_LIMIT:?}"));
            if v.get("method").is_some() {
                self.events.push(v.clone());
            }
            if wanted(&v) {
                return v;
            }
        }
    }

    fn browser_call(&mut self, method: &str, params: Value) -> Value {
        self.send(method, params, None)
    }

    /// A protocol call on the page; its result.
    ///
    /// # Panics
    ///
    /// On an error answer, or none within a minute.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let s = self.session.clone();
        self.send(method, params, Some(&s))
    }

    /// Open `file` and wait for its load event.
    pub fn open(&mut self, file: &Path) {
        let url = format!("file://{}", file.display());
        let seen = self.events.len();
        self.call("Page.navigate", json!({ "url": url }));
        let loaded = |e: &Value| e["method"] == "Page.loadEventFired";
        if !self.events[seen..].iter().any(loaded) {
            self.next_until(&format!("load of {url}"), loaded);
        }
    }

    /// The value of a JavaScript expression on the page (DevTools runs it;
    /// the page's own policy may allow no script at all).
    pub fn eval(&mut self, expression: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({ "expression": expression, "returnByValue": true }),
        );
        assert!(
            r.get("exceptionDetails").is_none(),
            "{expression}: {}",
            r["exceptionDetails"]
        );
        r["result"]["value"].clone()
    }

    /// The viewport: `width` x `height` CSS pixels, a phone's when `mobile`.
    pub fn viewport(&mut self, width: u32, height: u32, mobile: bool) {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile }),
        );
    }

    /// The CSS media type the page is laid out for (`print`, or `` for screen).
    pub fn media(&mut self, media: &str) {
        self.call("Emulation.setEmulatedMedia", json!({ "media": media }));
    }

    /// A PNG of the whole page, written to `file`.
    pub fn screenshot(&mut self, file: &Path) {
        let r = self.call(
            "Page.captureScreenshot",
            json!({ "format": "png", "captureBeyondViewport": true }),
        );
        let png = decode(r["data"].as_str().expect("screenshot data")).expect("base64 PNG");
        std::fs::write(file, png).expect("write the screenshot");
    }

    /// The page printed (A4): the PDF's bytes.
    pub fn print(&mut self) -> Vec<u8> {
        let r = self.call(
            "Page.printToPDF",
            json!({ "paperWidth": 8.27, "paperHeight": 11.69 }),
        );
        decode(r["data"].as_str().expect("PDF data")).expect("base64 PDF")
    }

    /// Every console message, uncaught exception and log entry of level
    /// error so far, as text.
    pub fn errors(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| {
                let p = &e["params"];
                match e["method"].as_str()? {
                    "Runtime.consoleAPICalled" if p["type"] == "error" => {
                        Some(p["args"].to_string())
                    }
                    "Runtime.exceptionThrown" => Some(p["exceptionDetails"].to_string()),
                    "Log.entryAdded" if p["entry"]["level"] == "error" => {
                        Some(p["entry"]["text"].as_str().unwrap_or("").to_string())
                    }
                    _ => None,
                }
            })
            .collect()
    }

    /// Every console and log message so far (any level), as text.
    pub fn messages(&self) -> Vec<String> {
        self.events
            .iter()
            .filter(|e| {
                matches!(
                    e["method"].as_str(),
                    Some("Runtime.consoleAPICalled" | "Runtime.exceptionThrown" | "Log.entryAdded")
                )
            })
            .map(|e| e["params"].to_string())
            .collect()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Where the tests keep what a person looks at afterwards (screenshots):
/// `test-artefacts/` in the target directory.
pub fn artefacts() -> PathBuf {
    let dir = crate::target_dir().join("test-artefacts");
    std::fs::create_dir_all(&dir).expect("the artefacts directory");
    dir
}

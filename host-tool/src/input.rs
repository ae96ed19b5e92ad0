//! Opening the inputs (stdin, a file, a serial port) and pumping their
//! bytes.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::error::{Error, Result};

/// Where a stream comes from.
#[derive(Debug, Clone)]
pub enum Source {
    /// Standard input.
    Stdin,
    /// A recording.
    File(String),
    /// A serial line.
    Serial {
        /// Device.
        device: String,
        /// Baud rate.
        baud: u32,
    },
}

impl Source {
    /// `-` is stdin, anything else a file.
    pub fn from_arg(arg: &str) -> Source {
        if arg == "-" {
            Source::Stdin
        } else {
            Source::File(arg.to_string())
        }
    }

    /// The name used in messages.
    pub(crate) fn name(&self) -> String {
        match self {
            Source::Stdin => "stdin".into(),
            Source::File(p) => p.clone(),
            Source::Serial { device, baud } => format!("{device} at {baud} baud"),
        }
    }

    /// Open for reading.
    pub(crate) fn open(&self) -> Result<Box<dyn Read + Send>> {
        self.open_until(None)
    }

    /// Open for reading; a serial line reads as ended once `stop` is set
    /// (a recorder's SIGINT or SIGTERM), so its recording closes cleanly.
    pub(crate) fn open_until(&self, stop: Option<Arc<AtomicBool>>) -> Result<Box<dyn Read + Send>> {
        match self {
            Source::Stdin => Ok(Box::new(io::stdin())),
            Source::File(p) => File::open(p)
                .map(|f| Box::new(f) as Box<dyn Read + Send>)
                .map_err(|source| Error::Input {
                    what: p.clone(),
                    source,
                }),
            Source::Serial { device, baud } => open_serial(device, *baud)
                .map(|port| {
                    Box::new(SerialReader {
                        port,
                        stop,
                        device: device.clone(),
                        baud: *baud,
                    }) as Box<dyn Read + Send>
                })
                .map_err(|e| Error::Serial {
                    device: device.clone(),
                    message: e.to_string(),
                }),
        }
    }

    /// When the stream ended: a file's modification time, else now.
    pub(crate) fn end_time(&self) -> SystemTime {
        match self {
            Source::File(p) => std::fs::metadata(Path::new(p))
                .and_then(|m| m.modified())
                .unwrap_or_else(|_| SystemTime::now()),
            _ => SystemTime::now(),
        }
    }

    /// Whether the end of input only comes from the stream itself (a
    /// serial line has no end of file).
    pub(crate) fn endless(&self) -> bool {
        matches!(self, Source::Serial { .. })
    }
}

/// Open a serial device raw, 8N1, without flow control, at `baud`, with
/// reads that time out after 200 ms.
fn open_serial(device: &str, baud: u32) -> io::Result<serial2::SerialPort> {
    let mut port = serial2::SerialPort::open(device, |mut s: serial2::Settings| {
        s.set_raw();
        s.set_baud_rate(baud)?;
        s.set_char_size(serial2::CharSize::Bits8);
        s.set_stop_bits(serial2::StopBits::One);
        s.set_parity(serial2::Parity::None);
        s.set_flow_control(serial2::FlowControl::None);
        Ok(s)
    })?;
    port.set_read_timeout(Duration::from_millis(200))?;
    Ok(port)
}

/// How often a recorder looks for a serial device that went away.
const REPLUG_POLL: Duration = Duration::from_millis(200);

/// A serial port whose read timeouts mean "nothing yet", not an error,
/// until the stop flag is set. With a stop flag (a recorder), a device
/// that goes away (an unplugged USB adapter: a read error or a hangup) is
/// waited for and opened again under the same path, as
/// `/dev/serial/by-id/...` comes back after a replug; the frames sent
/// meanwhile show as sequence gaps.
struct SerialReader {
    port: serial2::SerialPort,
    stop: Option<Arc<AtomicBool>>,
    device: String,
    baud: u32,
}

impl SerialReader {
    fn stopped(&self) -> bool {
        self.stop
            .as_ref()
            .is_some_and(|s| s.load(Ordering::Acquire))
    }

    /// Wait for the device to come back and open it; `false` if the
    /// recorder was stopped first.
    fn replug(&mut self, why: &str) -> bool {
        crate::console::say(format_args!(
            "{}: gone ({why}); waiting for it to come back",
            self.device
        ));
        loop {
            if self.stopped() {
                return false;
            }
            std::thread::sleep(REPLUG_POLL);
            if let Ok(p) = open_serial(&self.device, self.baud) {
                self.port = p;
                crate::console::say(format_args!("{}: back, reading again", self.device));
                return true;
            }
        }
    }
}

impl Read for SerialReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let why = match self.port.read(buf) {
                Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                    if self.stopped() {
                        return Ok(0);
                    }
                    continue;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // Not a recorder: the stream ends here.
                other if self.stop.is_none() => return other,
                Ok(0) => "hung up".to_string(),
                Err(e) => e.to_string(),
                Ok(n) => return Ok(n),
            };
            if !self.replug(&why) {
                return Ok(0);
            }
        }
    }
}

/// Read `r` to its end in chunks, handing each to `f`. `f` returns
/// `false` to stop early.
pub(crate) fn pump(r: &mut dyn Read, mut f: impl FnMut(&[u8]) -> Result<bool>) -> io::Result<()> {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match r.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => match f(buf.get(..n).unwrap_or(&[])) {
                Ok(true) => {}
                Ok(false) => return Ok(()),
                Err(Error::Output { source, .. }) => return Err(source),
                Err(e) => return Err(io::Error::other(e.to_string())),
            },
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

//! Stream links: TCP with a reconnect mid-run, and a serial line (a pty
//! pair standing in for the UART) in raw mode.

use std::io::Read;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use latscope_core::wire::{Body, Bye, ByeReason, Frame};
use latscope_testkit::target::{decode_all, serial};
use latscope_testkit::this_target;
use latscope_testkit::wait::{accept, assert_run_ok, until};

/// Decode what a connection delivered, tolerating a cut last frame.
fn decode_lenient(bytes: &[u8]) -> Vec<Frame> {
    let (frames, _, stats) = latscope_testkit::target::decode_lenient(bytes);
    assert_eq!(stats.crc_errors, 0);
    frames
}

#[test]
fn tcp_reconnects_and_the_new_connection_is_exact() {
    let _g = serial();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let dest = format!("tcp:127.0.0.1:{port}");
    let json = std::env::temp_dir().join(format!("latscope-tcp-{}.json", std::process::id()));
    let json_arg = format!("--json={}", json.display());
    let args = [
        "-t",
        "2",
        "-d",
        "0",
        "-D",
        "4s",
        "-q",
        "--stream",
        &dest,
        "--report-interval",
        "200ms",
        &json_arg,
    ];
    let mut child = this_target!().spawn(&args);

    // first connection: read a while, then hang up on the target
    let c1 = accept(&listener, Duration::from_secs(10));
    let first = read_for(c1, Duration::from_millis(1200));
    let f1 = decode_lenient(&first);
    assert!(matches!(f1[0].body, Body::Hello(_)), "hello first");

    // the target keeps measuring and comes back
    let mut c2 = accept(&listener, Duration::from_secs(10));
    let mut second = Vec::new();
    c2.read_to_end(&mut second)
        .expect("the second connection ends within 10 s");
    until(Duration::from_secs(10), "the end of the run", || {
        child.try_wait().unwrap()
    });
    // frames sent while nobody listened may be lost, and then said
    assert_run_ok(&child.wait_with_output().unwrap());
    let f2 = decode_all(&second);
    let Body::Hello(h) = &f2[0].body else {
        panic!("a new connection starts with a hello")
    };
    let run_id = h.run_id;
    let Body::Hello(h1) = &f1[0].body else {
        unreachable!()
    };
    assert_eq!(h1.run_id, run_id, "same run");
    // then (after the hello's warnings, e.g. of a degraded run) the
    // cumulative snapshot of each thread (stats + chunks)
    let after = f2[1..].iter().find(|f| !matches!(f.body, Body::Log(_)));
    assert!(
        matches!(after.map(|f| &f.body), Some(Body::Stats(_))),
        "{after:?}"
    );
    let Body::Bye(bye) = f2.last().unwrap().body else {
        panic!("bye last")
    };
    assert_eq!(bye.reason, ByeReason::Completed);
    let json = std::fs::read_to_string(&json).unwrap();
    for t in 0..2u16 {
        check_last_figures(&f2, t, &bye, &json);
    }
}

/// What a connection delivers within `limit`; then it is closed.
fn read_for(mut c: std::net::TcpStream, limit: Duration) -> Vec<u8> {
    c.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut got = Vec::new();
    let t0 = Instant::now();
    let mut buf = [0u8; 4096];
    while t0.elapsed() < limit {
        match c.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(_) => {}
        }
    }
    got
}

/// Thread `t`'s last statistics and snapshot on the second connection are
/// the run's final figures (as its `--json` says).
fn check_last_figures(f2: &[Frame], t: u16, bye: &Bye, json: &str) {
    let last = f2
        .iter()
        .rev()
        .find_map(|f| match &f.body {
            Body::Stats(s) if s.thread == t => Some(*s),
            _ => None,
        })
        .unwrap();
    assert!(last.last_report);
    let cycles = format!("\"cycles\": {},", last.cycles);
    assert!(
        json.contains(&cycles),
        "thread {t}: {cycles} not in the JSON"
    );
    let max = format!("\"max_ns\": {},", last.max);
    assert!(json.contains(&max), "thread {t}: {max}");
    // the last snapshot of the second connection sums to the count
    let total: u64 = f2
        .iter()
        .filter_map(|f| match &f.body {
            Body::Chunk(c) if c.thread == t && c.epoch == bye.epoch => Some(
                c.runs
                    .iter(c.start)
                    .map(|p| p.expect("well-formed runs").1)
                    .sum::<u64>(),
            ),
            _ => None,
        })
        .sum();
    assert_eq!(total, last.count);
}

#[test]
fn serial_line_in_raw_mode_carries_the_stream() {
    use rustix::pty::{grantpt, openpt, ptsname, unlockpt, OpenptFlags};
    let _g = serial();
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).unwrap();
    grantpt(&master).unwrap();
    unlockpt(&master).unwrap();
    let name = ptsname(&master, Vec::new()).unwrap();
    let path = name.to_str().unwrap().to_string();
    let dest = format!("serial:{path}:115200");
    let args = [
        "-l",
        "1500",
        "-q",
        "--stream",
        &dest,
        "--report-interval",
        "200ms",
    ];
    let mut child = this_target!().spawn(&args);
    let mut bytes = Vec::new();
    let mut buf = [0u8; 4096];
    let t0 = Instant::now();
    loop {
        let mut p = [rustix::event::PollFd::new(
            &master,
            rustix::event::PollFlags::IN,
        )];
        let ready = rustix::event::poll(
            &mut p,
            Some(&rustix::time::Timespec {
                tv_sec: 0,
                tv_nsec: 100_000_000,
            }),
        )
        .unwrap_or(0);
        if ready > 0 {
            match rustix::io::read(&master, &mut buf) {
                Ok(n) if n > 0 => bytes.extend_from_slice(&buf[..n]),
                _ => {}
            }
        }
        if let Some(s) = child.try_wait().unwrap() {
            assert!(s.success());
            // drain what is left
            while let Ok(n) = rustix::io::read(&master, &mut buf) {
                if n == 0 {
                    break;
                }
                bytes.extend_from_slice(&buf[..n]);
                let mut p = [rustix::event::PollFd::new(
                    &master,
                    rustix::event::PollFlags::IN,
                )];
                if rustix::event::poll(&mut p, Some(&rustix::time::Timespec::default()))
                    .unwrap_or(0)
                    == 0
                {
                    break;
                }
            }
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "run did not end");
    }
    let frames = decode_all(&bytes);
    assert!(matches!(frames[0].body, Body::Hello(_)));
    assert!(matches!(frames.last().unwrap().body, Body::Bye(_)));
}

//! The `/metrics` server: a minimal HTTP/1.1 server for a lab's
//! Prometheus. The requests are read by one thread without blocking
//! (`http.rs`): a slow or endless client costs a pending slot of at most
//! 8 KiB for at most 2 s, and only a complete request takes one of the
//! [`WORKERS`], which answer with the exposition (`exposition.rs`).

use std::net::{TcpListener, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use super::super::allow::Net;
use super::super::http::{self, Refusal, Request};
use super::super::targets::{FleetStats, TargetTable};
use super::exposition::{exposition, Exposition, ServerStats};
use crate::error::{Error, Result};

/// Threads that answer complete requests.
const WORKERS: usize = 2;
/// Complete requests that may wait for a worker; more are answered 503.
const QUEUE: usize = 8;
/// How long a response has to be taken by its client.
const WRITE_DEADLINE: Duration = Duration::from_secs(2);

/// Answer one complete request; `body` is reused from request to
/// request, so a scrape of hundreds of runs does not churn the allocator.
fn answer(
    mut stream: TcpStream,
    req: &Request,
    targets: &TargetTable,
    server: &ServerStats,
    body: &mut String,
) {
    let deadline = Instant::now() + WRITE_DEADLINE;
    let (status, ctype) = match (req.method.as_str(), req.path.as_str()) {
        ("GET", "/metrics") | ("GET", "/metrics/") => {
            let x = Exposition::negotiate(&req.accept);
            let fleet = targets
                .listening
                .load(Ordering::Relaxed)
                .then_some(&targets.stats);
            FleetStats::bump(server.served(x));
            targets.with_views(|views| exposition(body, x, views, fleet, Some(server)));
            ("200 OK", x.content_type())
        }
        ("GET", "/") => {
            body.clear();
            body.push_str("latscope-host: metrics at /metrics\n");
            ("200 OK", "text/plain; charset=utf-8")
        }
        ("GET", _) => {
            body.clear();
            body.push_str("not found\n");
            ("404 Not Found", "text/plain")
        }
        _ => {
            body.clear();
            body.push_str("only GET\n");
            ("405 Method Not Allowed", "text/plain")
        }
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = http::write_by(&mut stream, head.as_bytes(), deadline)
        .and_then(|()| http::write_by(&mut stream, body.as_bytes(), deadline));
}

/// Serve the targets' metrics on `addr` to peers in `allow` (any, if
/// empty): one thread reads the requests without blocking, [`WORKERS`]
/// threads answer the complete ones, each with its own reused body buffer.
pub(crate) fn serve(
    addr: &str,
    allow: Vec<Net>,
    targets: Arc<TargetTable>,
) -> Result<std::net::SocketAddr> {
    let bind = |source| Error::Bind {
        addr: addr.to_string(),
        source,
    };
    let listener = TcpListener::bind(addr).map_err(bind)?;
    let mut reader = http::Reader::new(listener, allow).map_err(bind)?;
    let local = reader.local_addr().map_err(bind)?;
    let server = Arc::new(ServerStats::default());
    let (tx, rx) = mpsc::sync_channel::<(TcpStream, Request)>(QUEUE);
    let rx = Arc::new(Mutex::new(rx));
    for n in 0..WORKERS {
        let (rx, targets, server) = (Arc::clone(&rx), Arc::clone(&targets), Arc::clone(&server));
        thread::Builder::new()
            .name(format!("metrics-{n}"))
            .spawn(move || {
                let mut body = String::new();
                loop {
                    let job = rx.lock().map(|r| r.recv());
                    let Ok(Ok((stream, req))) = job else {
                        return;
                    };
                    answer(stream, &req, &targets, &server, &mut body);
                }
            })
            .map_err(|source| Error::Spawn {
                thread: "metrics worker",
                source,
            })?;
    }
    thread::Builder::new()
        .name("metrics".into())
        .spawn(move || loop {
            reader.turn(
                |stream, req| match tx.try_send((stream, req)) {
                    Ok(()) => {}
                    Err(TrySendError::Full((stream, _))) => {
                        FleetStats::bump(server.refused(Refusal::Busy));
                        http::refuse(stream, Refusal::Busy);
                    }
                    Err(TrySendError::Disconnected(_)) => {}
                },
                |why| FleetStats::bump(server.refused(why)),
            );
        })
        .map_err(|source| Error::Spawn {
            thread: "metrics",
            source,
        })?;
    Ok(local)
}

//! The server's connections, and what bounds a client that stalls them. Each is
//! accepted under a cap per client address (more are answered 503 and closed), served
//! by hyper's HTTP/1 with a deadline on each request's headers (which also ends a
//! kept-alive connection left idle that long), and written through [`Stalling`], which
//! cuts the connection off when the client takes nothing of an answer for
//! [`Deadlines::send_idle`]. An RPC's answer is an [`Answer`]: it holds its bytes of the
//! answer budget until the client has taken them, and is cut off past its overall
//! deadline. The deadlines of request bodies are `rpc`'s, where bodies are read.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::ConnectInfo;
use axum::http::{HeaderMap, Request, header};
use axum::response::Response;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::time::{Instant, Sleep};
use tower::ServiceExt;

use crate::AppState;
use crate::limit::{ANSWER_BUDGET_BYTES, BODY_BUDGET_BYTES, Budget, ClientAddr, Deadlines, Hold};

/// The most bytes hyper buffers for one connection, each way: a request's headers must
/// fit (431 beyond), and an unread answer is held this far beyond its [`Answer`].
const CONNECTION_BUFFER: usize = 64 * 1024;

/// How much of an answer is handed to hyper at a time.
const ANSWER_CHUNK: usize = 32 * 1024;

/// `redline serve`'s flags for what a client may hold and how long it is waited for
/// (`docs/server.md`, "Deadlines and budgets").
#[derive(clap::Args, Debug)]
pub struct TransportArgs {
    /// How many MiB of request bodies all requests together may hold at once, counted
    /// as they arrive; one token or client address may hold a quarter (at least one
    /// largest body). Beyond: 503 (all) or 429 (one), with Retry-After.
    #[arg(long, default_value_t = (BODY_BUDGET_BYTES >> 20) as u64,
          value_parser = clap::value_parser!(u64).range(16..=(1 << 20)))]
    body_budget_mb: u64,
    /// How many MiB of answers all requests together may hold until sent; one token
    /// or client address may hold a quarter. Beyond: 503 (all) or 429 (one).
    #[arg(long, default_value_t = (ANSWER_BUDGET_BYTES >> 20) as u64,
          value_parser = clap::value_parser!(u64).range(64..=(1 << 20)))]
    answer_budget_mb: u64,
    /// Seconds a request's headers may take to arrive, and a kept-alive connection may
    /// stay idle, before the connection is closed.
    #[arg(long, default_value_t = Deadlines::default().headers.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    header_timeout_secs: u64,
    /// Seconds a request body may pause between two chunks; 408 beyond.
    #[arg(long, default_value_t = Deadlines::default().body_idle.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    body_idle_timeout_secs: u64,
    /// Seconds an answer may wait for the client to read on; the connection is cut
    /// off beyond.
    #[arg(long, default_value_t = Deadlines::default().send_idle.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    send_idle_timeout_secs: u64,
    /// The slowest a body or an answer may move on average, in KiB a second: each has
    /// its idle deadline plus its length at this rate in all (408 or cut off beyond).
    #[arg(long, default_value_t = Deadlines::default().min_bytes_per_sec / 1024,
          value_parser = clap::value_parser!(u64).range(1..=(1 << 20)))]
    min_transfer_kib_per_sec: u64,
    /// How many connections one client address may hold open at once; more are
    /// answered 503 and closed. Not applied with --client-ip-header (every connection
    /// is the proxy's: cap them there).
    #[arg(long, default_value_t = Deadlines::default().connections_per_client as u64,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    max_connections_per_client: u64,
}

impl TransportArgs {
    /// Sets `state`'s budgets and deadlines to these.
    pub fn apply(&self, state: &mut AppState) {
        state.body_budget = Budget::for_bodies((self.body_budget_mb << 20) as usize);
        state.answer_budget = Budget::for_answers((self.answer_budget_mb << 20) as usize);
        state.deadlines = Deadlines {
            headers: Duration::from_secs(self.header_timeout_secs),
            body_idle: Duration::from_secs(self.body_idle_timeout_secs),
            send_idle: Duration::from_secs(self.send_idle_timeout_secs),
            min_bytes_per_sec: self.min_transfer_kib_per_sec * 1024,
            connections_per_client: self.max_connections_per_client as usize,
        };
    }
}

/// Serves `app` on `listener` until `stop` ends, then lets the requests in flight
/// finish (the caller ends the event streams) and returns. `per_client_cap`: whether
/// [`Deadlines::connections_per_client`] applies (not behind a reverse proxy).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    deadlines: Deadlines,
    per_client_cap: bool,
    stop: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(deadlines.headers).max_buf_size(CONNECTION_BUFFER);
    let clients = Arc::new(Clients::default());
    // Each connection holds a `stopping` sender and watches for its receiver to go
    // (the signal), and a `finished` receiver, whose last drop ends the wait below.
    let (stopping, stop_signal) = watch::channel(());
    let (finished, finished_rx) = watch::channel(());
    tokio::spawn(async move {
        stop.await;
        drop(stop_signal);
    });
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    accept_failed(e).await;
                    continue;
                }
            },
            _ = stopping.closed() => break,
        };
        let slot = match per_client_cap {
            true => match clients.enter(peer, deadlines.connections_per_client) {
                Some(slot) => Some(slot),
                None => {
                    refuse(&tcp);
                    continue;
                }
            },
            false => None,
        };
        // Small answers and event frames go out at once: with Nagle's algorithm a write
        // waits for the peer's delayed ACK (~40 ms) whenever earlier data is unacknowledged.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::warn!(error = %e, "setting TCP_NODELAY");
        }
        let io = TokioIo::new(Stalling { tcp, limit: deadlines.send_idle, stalled: None });
        let router = app.clone();
        // Each request knows its peer's address: the sign-in calls are limited per client.
        let service = hyper::service::service_fn(move |request: Request<Incoming>| {
            let mut request = request.map(Body::new);
            request.extensions_mut().insert(ConnectInfo(peer));
            router.clone().oneshot(request)
        });
        let connection = http.serve_connection(io, service);
        let stopping = stopping.clone();
        let finished = finished_rx.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let mut connection = pin!(connection);
            let mut stop = pin!(stopping.closed());
            let mut stopped = false;
            loop {
                tokio::select! {
                    served = connection.as_mut() => {
                        if let Err(e) = served {
                            tracing::debug!(error = %e, "connection ended");
                        }
                        break;
                    }
                    _ = &mut stop, if !stopped => {
                        stopped = true;
                        connection.as_mut().graceful_shutdown();
                    }
                }
            }
            drop(finished);
        });
    }
    drop(finished_rx);
    drop(listener);
    finished.closed().await;
    Ok(())
}

/// What is done when accepting fails: a connection that failed on its way in is
/// skipped; anything else (out of file descriptors) is logged and waited out a moment.
async fn accept_failed(e: io::Error) {
    use io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if !matches!(e.kind(), ConnectionRefused | ConnectionAborted | ConnectionReset) {
        tracing::error!(error = %e, "accepting a connection");
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Tells a client over its connections so, if its socket takes it at once, and closes.
fn refuse(tcp: &TcpStream) {
    let body = r#"{"message":"too many connections from this address; try again","code":"internal"}"#;
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\n\
         connection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let _ = tcp.try_write(answer.as_bytes());
}

/// The open connections by client address (as [`ClientAddr::key`] names it).
#[derive(Debug, Default)]
struct Clients(Mutex<HashMap<String, usize>>);

/// One of a client's connections, counted until dropped.
struct ClientSlot {
    clients: Arc<Clients>,
    key: String,
}

impl Clients {
    /// A slot for a connection from `peer`, unless it holds `max` already.
    fn enter(self: &Arc<Self>, peer: SocketAddr, max: usize) -> Option<ClientSlot> {
        let key = ClientAddr(Some(peer)).key(&HeaderMap::new(), None);
        let mut open = self.0.lock().expect("connections lock");
        let n = open.entry(key.clone()).or_default();
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(ClientSlot { clients: self.clone(), key })
    }
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        let mut open = self.clients.0.lock().expect("connections lock");
        if let Some(n) = open.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.key);
            }
        }
    }
}

/// A connection's socket whose writes fail once the client has taken nothing for
/// `limit`: hyper then ends the connection, and drops the answer it was sending. A
/// client that reads as it should (an idle event stream included) never waits on a
/// write, so this never arms for it.
struct Stalling {
    tcp: TcpStream,
    limit: Duration,
    /// Since when the client has taken nothing: armed by a write that must wait.
    stalled: Option<Pin<Box<Sleep>>>,
}

impl Stalling {
    /// `written`, or an error once the stall has lasted `limit`.
    fn check<T>(&mut self, cx: &mut Context<'_>, written: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        match written {
            Poll::Ready(written) => {
                self.stalled = None;
                Poll::Ready(written)
            }
            Poll::Pending => {
                let limit = self.limit;
                let stalled = self.stalled.get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
                match stalled.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the client stopped reading its answer",
                    ))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }
}

impl AsyncRead for Stalling {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_read(cx, buf)
    }
}

impl AsyncWrite for Stalling {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.tcp).poll_write(cx, buf);
        this.check(cx, written)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.tcp).poll_write_vectored(cx, bufs);
        this.check(cx, written)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_shutdown(cx)
    }
}

/// An RPC's JSON answer, handed to hyper a chunk at a time (a copy each, so that what
/// hyper buffers does not keep the whole answer alive): it holds its bytes of the
/// answer budget until its last chunk is taken, and ends the connection with an error
/// once its overall deadline has passed.
pub struct Answer {
    json: Bytes,
    sent: usize,
    deadline: Instant,
    hold: Option<Hold>,
}

impl Answer {
    /// The response of `json`, whose bytes `hold` holds, sent within `deadlines`.
    pub fn response(json: Vec<u8>, hold: Hold, deadlines: &Deadlines) -> Response {
        let deadline = Instant::now() + deadlines.overall(deadlines.send_idle, json.len());
        let answer = Answer { json: Bytes::from(json), sent: 0, deadline, hold: Some(hold) };
        let mut response = Response::new(Body::new(answer));
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json"));
        response
    }
}

impl hyper::body::Body for Answer {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<io::Result<Frame<Bytes>>>> {
        let this = self.get_mut();
        if this.sent == this.json.len() {
            return Poll::Ready(None);
        }
        if Instant::now() >= this.deadline {
            this.hold = None;
            let late = "the client did not read its answer in time";
            return Poll::Ready(Some(Err(io::Error::new(io::ErrorKind::TimedOut, late))));
        }
        let end = (this.sent + ANSWER_CHUNK).min(this.json.len());
        let chunk = Bytes::copy_from_slice(&this.json[this.sent..end]);
        this.sent = end;
        if end == this.json.len() {
            // All of it is hyper's now: the answer and its hold go.
            (this.json, this.sent, this.hold) = (Bytes::new(), 0, None);
        }
        Poll::Ready(Some(Ok(Frame::data(chunk))))
    }

    fn is_end_stream(&self) -> bool {
        self.sent == self.json.len()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact((self.json.len() - self.sent) as u64)
    }
}

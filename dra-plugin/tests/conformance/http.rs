//! The HTTP/1.1 the fake API servers speak (`fake_apiserver`,
//! `fake_compute_domains`): a server of some state on a free port of 127.0.0.1, a
//! thread per connection ([`Served`], with the test's side of the state:
//! read, change, wait for), one request read from a kept-alive connection
//! (`Content-Length` bodies, as kube's client sends them), one JSON answer
//! written, a query value decoded.

use std::io::{BufRead, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The state and the condition its changes are signalled on.
pub type Shared<S> = (Mutex<S>, Condvar);

/// A server of the state `S`, until the process ends.
pub struct Served<S> {
    pub url: String,
    shared: Arc<Shared<S>>,
}

impl<S> Clone for Served<S> {
    fn clone(&self) -> Self {
        Self {
            url: self.url.clone(),
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<S: Send + 'static> Served<S> {
    /// Serves `state` on a free port of 127.0.0.1, each connection on a
    /// thread of its own running `connection`.
    pub fn serve(state: S, connection: fn(TcpStream, &Shared<S>)) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a fake API server");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let shared = Arc::new((Mutex::new(state), Condvar::new()));
        let serving = Arc::clone(&shared);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let shared = Arc::clone(&serving);
                std::thread::spawn(move || connection(stream, &shared));
            }
        });
        Self { url, shared }
    }

    /// The state, locked.
    pub fn state(&self) -> MutexGuard<'_, S> {
        self.shared.0.lock().expect("state lock")
    }

    /// Changes the state as a client other than the one tested would, then
    /// wakes the watches and waiters.
    pub fn mutate<T>(&self, change: impl FnOnce(&mut S) -> T) -> T {
        let out = change(&mut self.state());
        self.shared.1.notify_all();
        out
    }

    /// Waits until `done` holds for the state (an upper bound, not a
    /// timing); false after `bound`.
    pub fn wait_for(&self, bound: Duration, done: impl Fn(&S) -> bool) -> bool {
        let deadline = Instant::now() + bound;
        let mut state = self.state();
        while !done(&state) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            state = self
                .shared
                .1
                .wait_timeout(state, left)
                .expect("state lock")
                .0;
        }
        true
    }
}

/// One request.
pub struct Request {
    pub method: String,
    /// The path with its query.
    pub target: String,
    /// Its headers, names lowercase.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    /// The value of the header `name` (lowercase), if sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        (self.headers.iter())
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The next request on the connection; `None` once it closed.
pub fn read_request(reader: &mut impl BufRead) -> Option<Request> {
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
        return None;
    }
    let mut length = 0usize;
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 {
            return None;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
            headers.push((name.to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).ok()?;
    let mut parts = request_line.split_whitespace();
    Some(Request {
        method: parts.next().unwrap_or_default().to_owned(),
        target: parts.next().unwrap_or_default().to_owned(),
        headers,
        body,
    })
}

/// Writes `reply` with `status`; false once the connection is gone.
pub fn respond(writer: &mut impl Write, status: u16, reply: &Value) -> bool {
    let text = reply.to_string();
    let head = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        text.len()
    );
    writer
        .write_all(head.as_bytes())
        .and_then(|()| writer.write_all(text.as_bytes()))
        .is_ok()
}

/// `%XX` and `+` decoded (a query's label or field selector).
pub fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(v) = u8::from_str_radix(&text[i + 1..i + 3], 16)
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(if bytes[i] == b'+' { b' ' } else { bytes[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

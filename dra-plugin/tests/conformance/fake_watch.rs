//! The watch side of the fake API server, as kube's watcher uses it:
//! `GET .../resourceslices?watch=true&resourceVersion=N&fieldSelector=...`
//! answered with a chunked stream of JSON lines (`{"type": "ADDED" |
//! "MODIFIED" | "DELETED", "object": ...}`) for every change after N that the
//! selector matches, in order. Like the real server: a version older than
//! the compacted history gets one `ERROR` event with a 410 Expired Status
//! (the watcher must list again); `allowWatchBookmarks=true` gets `BOOKMARK`
//! events (only the resourceVersion) when the test asks for them;
//! `timeoutSeconds` ends the stream; version 0 starts with the objects there
//! are. The test can end every open watch (`watch_epoch`).

use std::io::Write;
use std::net::TcpStream;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::fake_apiserver::{State, query_value, selects};

/// What to send next.
enum Next {
    Lines(Vec<Value>, u64),
    End,
}

/// One open watch.
struct Watch {
    selector: String,
    /// The `watch_epoch` it opened in: a change ends it.
    epoch: u64,
    /// The last `bookmark_epoch` it answered.
    bookmark_epoch: u64,
    bookmarks: bool,
    deadline: Instant,
}

/// Serves one watch request on `out` until it ends; then closes it.
pub fn serve(mut out: TcpStream, shared: &(Mutex<State>, Condvar), query: &str) {
    let selector = query_value(query, "fieldSelector").unwrap_or_default();
    let from: u64 = query_value(query, "resourceVersion")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let bookmarks = query_value(query, "allowWatchBookmarks").as_deref() == Some("true");
    let timeout = query_value(query, "timeoutSeconds")
        .and_then(|v| v.parse().ok())
        .map_or(Duration::from_secs(1800), Duration::from_secs);
    let deadline = Instant::now() + timeout;
    let (lock, changed) = shared;
    let (epoch, bookmark_epoch, first) = {
        let mut state = lock.lock().expect("state lock");
        state.watch_selectors.push(selector.clone());
        state.watch_versions.push(from);
        state.watches_open += 1;
        state.watches_opened += 1;
        changed.notify_all();
        let first = if from != 0 && from < state.compacted_to {
            Next::Lines(vec![expired(from, state.compacted_to)], 0)
        } else if from == 0 {
            let now: Vec<Value> = (state.slices.values())
                .filter(|s| selects(&selector, s))
                .map(|s| json!({"type": "ADDED", "object": s}))
                .collect();
            Next::Lines(now, state.next_version)
        } else {
            Next::Lines(Vec::new(), from)
        };
        (state.watch_epoch, state.bookmark_epoch, first)
    };
    let mut watch = Watch {
        selector,
        epoch,
        bookmark_epoch,
        bookmarks,
        deadline,
    };
    let head =
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    let mut next = first;
    let mut ok = out.write_all(head.as_bytes()).is_ok();
    while ok {
        let Next::Lines(lines, sent) = next else {
            break;
        };
        ok = lines.iter().all(|line| chunk(&mut out, line));
        let marks = lines.iter().filter(|l| l["type"] == "BOOKMARK").count();
        if ok && marks > 0 {
            lock.lock().expect("state lock").bookmarks_sent += marks;
            changed.notify_all();
        }
        if lines.first().is_some_and(|l| l["type"] == "ERROR") {
            break;
        }
        next = watch.wait(shared, sent);
    }
    let _ = out.write_all(b"0\r\n\r\n");
    let mut state = lock.lock().expect("state lock");
    state.watches_open -= 1;
    changed.notify_all();
}

impl Watch {
    /// Waits for events after `sent` (or a bookmark, or the end).
    fn wait(&mut self, (lock, changed): &(Mutex<State>, Condvar), sent: u64) -> Next {
        let mut state = lock.lock().expect("state lock");
        loop {
            let now = Instant::now();
            if state.watch_epoch != self.epoch || now >= self.deadline {
                return Next::End;
            }
            let lines: Vec<Value> = (state.events.iter())
                .filter(|(version, _, object)| *version > sent && selects(&self.selector, object))
                .map(|(_, kind, object)| json!({"type": kind, "object": object}))
                .collect();
            let latest = state.events.last().map_or(sent, |(v, _, _)| *v).max(sent);
            if !lines.is_empty() {
                return Next::Lines(lines, latest);
            }
            if self.bookmarks && state.bookmark_epoch != self.bookmark_epoch {
                self.bookmark_epoch = state.bookmark_epoch;
                let version = state.next_version;
                let mark = json!({"type": "BOOKMARK", "object": {"kind": "ResourceSlice",
                    "apiVersion": "resource.k8s.io/v1",
                    "metadata": {"resourceVersion": version.to_string()}}});
                return Next::Lines(vec![mark], version);
            }
            state = changed
                .wait_timeout(state, self.deadline - now)
                .expect("state lock")
                .0;
        }
    }
}

/// The event a watch from a compacted version gets.
fn expired(from: u64, oldest: u64) -> Value {
    json!({"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "reason": "Expired", "code": 410,
        "message": format!("too old resource version: {from} ({oldest})")}})
}

/// Writes one JSON line as one chunk; false when the client is gone.
fn chunk(out: &mut TcpStream, line: &Value) -> bool {
    let text = format!("{line}\n");
    out.write_all(format!("{:x}\r\n{text}\r\n", text.len()).as_bytes())
        .and_then(|()| out.flush())
        .is_ok()
}

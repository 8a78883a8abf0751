//! Lists and watches of the ComputeDomain API server
//! ([`crate::fake_compute_domains`]), of any of its kinds, as kube's watcher uses
//! them: a list answers the objects (in a namespace, or all; matching a
//! label selector) with the server's resourceVersion; a watch
//! (`watch=true&resourceVersion=N`) answers a chunked stream of JSON lines,
//! every change after N that matches, in order (version 0: the objects
//! there are first), until `timeoutSeconds` or until the test closes every
//! watch.

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::fake_compute_domains::{Domains, Kind, query_value};
use crate::http::Shared;

/// Whether `labels` (an object's `metadata.labels`) match `selector`:
/// comma-separated `key`, `!key`, `key=value`, `key==value`, `key!=value`.
pub fn selects(selector: &str, labels: &Value) -> bool {
    selector.split(',').filter(|t| !t.is_empty()).all(|term| {
        if let Some((key, value)) = term.split_once("!=") {
            return labels[key].as_str() != Some(value);
        }
        if let Some((key, value)) = term.split_once('=') {
            let value = value.trim_start_matches('=');
            return labels[key].as_str() == Some(value);
        }
        match term.strip_prefix('!') {
            Some(key) => labels.get(key).is_none(),
            None => labels.get(term).is_some(),
        }
    })
}

/// Whether `object` is one a list or watch of `kind` in `namespace` with
/// `selector` answers.
fn wanted(object: &Value, namespace: Option<&str>, selector: &str) -> bool {
    let in_namespace =
        namespace.is_none_or(|ns| object["metadata"]["namespace"].as_str() == Some(ns));
    in_namespace && selects(selector, &object["metadata"]["labels"])
}

/// The list of `kind`.
pub fn list(state: &Domains, kind: Kind, namespace: Option<&str>, query: &str) -> (u16, Value) {
    let selector = query_value(query, "labelSelector").unwrap_or_default();
    let items: Vec<Value> = (state.objects(kind).values())
        .filter(|o| wanted(o, namespace, &selector))
        .cloned()
        .collect();
    (
        200,
        json!({"apiVersion": kind.api_version(), "kind": format!("{}List", kind.name()),
               "metadata": {"resourceVersion": state.version.to_string()}, "items": items}),
    )
}

/// Serves one watch on `out` until it ends.
pub fn serve(
    mut out: TcpStream,
    shared: &Shared<Domains>,
    kind: Kind,
    namespace: Option<String>,
    query: &str,
) {
    let selector = query_value(query, "labelSelector").unwrap_or_default();
    let from: u64 = query_value(query, "resourceVersion")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let timeout = query_value(query, "timeoutSeconds")
        .and_then(|v| v.parse().ok())
        .map_or(Duration::from_secs(1800), Duration::from_secs);
    let deadline = Instant::now() + timeout;
    let (lock, changed) = shared;
    let (epoch, mut lines, mut sent) = {
        let mut state = lock.lock().expect("state lock");
        state.watches_open += 1;
        let lines: Vec<Value> = if from == 0 {
            (state.objects(kind).values())
                .filter(|o| wanted(o, namespace.as_deref(), &selector))
                .map(|o| json!({"type": "ADDED", "object": o}))
                .collect()
        } else {
            Vec::new()
        };
        let sent = if from == 0 { state.version } else { from };
        (state.watch_epoch, lines, sent)
    };
    let head =
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    let mut ok = out.write_all(head.as_bytes()).is_ok();
    while ok {
        ok = lines.iter().all(|line| chunk(&mut out, line));
        let mut state = lock.lock().expect("state lock");
        loop {
            let now = Instant::now();
            if state.watch_epoch != epoch || now >= deadline {
                ok = false;
                break;
            }
            let first = state.events.partition_point(|e| e.0 <= sent);
            let events: Vec<&(u64, Kind, &'static str, Value)> = (state.events[first..].iter())
                .filter(|(v, k, _, o)| {
                    *v > sent && *k == kind && wanted(o, namespace.as_deref(), &selector)
                })
                .collect();
            let latest = state.events.last().map_or(sent, |e| e.0).max(sent);
            if !events.is_empty() {
                lines = events
                    .iter()
                    .map(|(_, _, t, o)| json!({"type": t, "object": o}))
                    .collect();
                sent = latest;
                break;
            }
            sent = latest;
            state = changed
                .wait_timeout(state, deadline - now)
                .expect("state lock")
                .0;
        }
    }
    let _ = out.write_all(b"0\r\n\r\n");
    let mut state = lock.lock().expect("state lock");
    state.watches_open -= 1;
    changed.notify_all();
}

/// Writes one JSON line as one chunk; false when the client is gone.
fn chunk(out: &mut TcpStream, line: &Value) -> bool {
    let text = format!("{line}\n");
    out.write_all(format!("{:x}\r\n{text}\r\n", text.len()).as_bytes())
        .and_then(|()| out.flush())
        .is_ok()
}

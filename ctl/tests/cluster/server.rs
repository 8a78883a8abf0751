//! A minimal API server over plain HTTP/1.1 on 127.0.0.1 that answers one
//! call, the list of ResourceClaims across namespaces, in pages of its own
//! size with a `continue` token (as the real one may give fewer items than
//! `limit`), or refuses it with a Status, and records the query of every
//! list. Anything else is 404.
//! Each answer closes its connection.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

/// The path of a list across namespaces.
pub const CLAIMS: &str = "/apis/resource.k8s.io/v1/resourceclaims";

pub struct ListServer {
    pub url: String,
    queries: Arc<Mutex<Vec<String>>>,
}

/// What the server answers a list.
#[derive(Clone)]
enum Answer {
    /// These pages.
    Pages(Vec<Vec<Value>>),
    /// This status code, with a Status saying `message`.
    Refuse(u16, &'static str),
}

impl ListServer {
    /// Serves `pages` of claims, each after the first behind the token
    /// `page-N`.
    pub fn start(pages: Vec<Vec<Value>>) -> Self {
        Self::serve(Answer::Pages(pages))
    }

    /// Answers every list with `code` and a Status saying `message`.
    pub fn refusing(code: u16, message: &'static str) -> Self {
        Self::serve(Answer::Refuse(code, message))
    }

    fn serve(answer_with: Answer) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the list server");
        let url = format!("http://{}", listener.local_addr().expect("its address"));
        let queries = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&queries);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                answer(stream, &answer_with, &seen);
            }
        });
        Self { url, queries }
    }

    /// The query of every list, in order.
    pub fn queries(&self) -> Vec<String> {
        self.queries.lock().expect("queries lock").clone()
    }
}

fn answer(stream: TcpStream, with: &Answer, seen: &Mutex<Vec<String>>) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone the stream"));
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
        return;
    }
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim_end().is_empty() {
            break;
        }
    }
    let target = request_line.split_whitespace().nth(1).unwrap_or_default();
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let (status, body) = if path == CLAIMS {
        seen.lock().expect("queries lock").push(query.to_owned());
        match with {
            Answer::Pages(pages) => page(pages, query),
            Answer::Refuse(code, message) => (*code, status_body(*code, message)),
        }
    } else {
        (404, status_body(404, &format!("{path} not found")))
    };
    let text = body.to_string();
    let head = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        text.len()
    );
    let mut writer = stream;
    let _ = writer
        .write_all(head.as_bytes())
        .and_then(|()| writer.write_all(text.as_bytes()));
}

/// The page a `continue` token asks for (none: the first).
fn page(pages: &[Vec<Value>], query: &str) -> (u16, Value) {
    let token = query
        .split('&')
        .find_map(|kv| kv.strip_prefix("continue="))
        .unwrap_or("page-0");
    let index: Option<usize> = token.strip_prefix("page-").and_then(|n| n.parse().ok());
    let Some(items) = index.and_then(|i| pages.get(i)) else {
        return (410, status_body(410, "the continue token is unknown"));
    };
    let next = index.map(|i| i + 1).filter(|n| *n < pages.len());
    let mut metadata = json!({ "resourceVersion": "100" });
    if let Some(next) = next {
        metadata["continue"] = json!(format!("page-{next}"));
    }
    let list = json!({ "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimList",
                       "metadata": metadata, "items": items });
    (200, list)
}

fn status_body(code: u16, message: &str) -> Value {
    let reason = match code {
        403 => "Forbidden",
        404 => "NotFound",
        410 => "Expired",
        _ => "InternalError",
    };
    json!({ "apiVersion": "v1", "kind": "Status", "status": "Failure", "message": message,
            "reason": reason, "code": code })
}

//! The HTTP/1.1 the fake API servers speak (`fake_apiserver`,
//! `fake_domains`): one request read from a kept-alive connection
//! (`Content-Length` bodies, as kube's client sends them), one JSON answer
//! written, a query value decoded.

use std::io::{BufRead, Write};

use serde_json::Value;

/// One request.
pub struct Request {
    pub method: String,
    /// The path with its query.
    pub target: String,
    pub body: Vec<u8>,
}

/// The next request on the connection; `None` once it closed.
pub fn read_request(reader: &mut impl BufRead) -> Option<Request> {
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
        return None;
    }
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 {
            return None;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).ok()?;
    let mut parts = request_line.split_whitespace();
    Some(Request {
        method: parts.next().unwrap_or_default().to_owned(),
        target: parts.next().unwrap_or_default().to_owned(),
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

//! The exporters over real sockets and files: the listener on a loopback
//! port the kernel picks, the textfile in a temp folder.

use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::format_rules::{check_openmetrics, check_prometheus, samples};
use super::{Fixed, busy_node};
use crate::config::{LoopbackAddr, MetricsConfig};
use crate::metrics::{Exporters, Metrics, MetricsError, UsageSource};

/// A plain HTTP/1.1 request; returns (status line, headers, body).
async fn get(addr: std::net::SocketAddr, request: &str) -> (String, String, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await.unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let (status, headers) = head.split_once("\r\n").unwrap_or((head, ""));
    (
        status.to_owned(),
        headers.to_ascii_lowercase(),
        body.to_owned(),
    )
}

fn config(listen: Option<&str>, textfile: Option<std::path::PathBuf>) -> MetricsConfig {
    MetricsConfig {
        listen: listen.map(|a| LoopbackAddr::try_from(a.to_owned()).unwrap()),
        textfile,
        ..MetricsConfig::default()
    }
}

fn parts() -> (Arc<dyn UsageSource>, Arc<Metrics>) {
    (Arc::new(Fixed(busy_node())), Arc::new(Metrics::new("sim")))
}

#[tokio::test]
async fn the_listener_serves_both_formats_and_nothing_else() {
    let (source, metrics) = parts();
    let exporters = Exporters::start(&config(Some("127.0.0.1:0"), None), source, metrics)
        .await
        .unwrap();
    let addr = exporters.listen_addr().unwrap();
    assert!(addr.ip().is_loopback() && addr.port() != 0, "{addr}");

    let req = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    let (status, headers, body) = get(addr, req).await;
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(
        headers.contains("content-type: text/plain; version=0.0.4"),
        "{headers}"
    );
    check_prometheus(&body);
    assert!(samples(&body).iter().any(|s| s.name == "gpuslice_claims"));

    let req = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
               Accept: application/openmetrics-text;version=1.0.0,text/plain;q=0.5\r\n\r\n";
    let (status, headers, body) = get(addr, req).await;
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(headers.contains("content-type: application/openmetrics-text; version=1.0.0"));
    check_openmetrics(&body);

    let req = "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    assert_eq!(get(addr, req).await.0, "HTTP/1.1 404 Not Found");
    let req = "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    let (status, headers, _) = get(addr, req).await;
    assert_eq!(status, "HTTP/1.1 405 Method Not Allowed");
    assert!(headers.contains("allow: get, head"), "{headers}");

    exporters.stop().await;
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "the port is closed after stop"
    );
}

#[tokio::test]
async fn a_taken_port_is_an_error_naming_the_address() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let (source, metrics) = parts();
    let err = Exporters::start(&config(Some(&addr), None), source, metrics)
        .await
        .unwrap_err();
    assert!(matches!(err, MetricsError::Bind { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("metrics.listen") && text.contains(&addr),
        "{text}"
    );
}

#[tokio::test]
async fn the_textfile_is_written_at_start_and_at_stop_in_the_0_0_4_format() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gpuslice.prom");
    let (source, metrics) = parts();
    let exporters = Exporters::start(&config(None, Some(path.clone())), source, metrics.clone())
        .await
        .unwrap();
    let first = std::fs::read_to_string(&path).unwrap();
    check_prometheus(&first);
    assert!(!first.contains("gpuslice_errors_total{"), "no error yet");
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o644,
        "node_exporter's user must read it"
    );
    metrics.count_error("Prepare", tonic::Code::Unavailable);
    exporters.stop().await;
    let last = std::fs::read_to_string(&path).unwrap();
    check_prometheus(&last);
    assert!(
        last.contains("gpuslice_errors_total{rpc=\"Prepare\",code=\"UNAVAILABLE\"} 1"),
        "{last}"
    );
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["gpuslice.prom"], "no temp file left");
}

#[tokio::test]
async fn a_textfile_folder_that_is_missing_fails_start_up_and_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent/gpuslice.prom");
    let (source, metrics) = parts();
    let err = Exporters::start(&config(None, Some(path)), source, metrics)
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("metrics.textfile") && text.contains("ReadWritePaths"),
        "{text}"
    );
}

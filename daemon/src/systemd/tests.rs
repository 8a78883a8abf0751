//! The notify sender against a reader that falls behind: it never waits
//! past its bound, and sends again once there is room.

use std::os::unix::net::UnixDatagram;
use std::time::Duration;

use super::send_to;

/// Sends until the queue refuses one; returns how many were queued.
fn fill(path: &std::ffi::OsStr) -> usize {
    let mut queued = 0;
    loop {
        match send_to(path, b"STATUS=x\n", None) {
            Ok(()) => queued += 1,
            Err(err) => {
                assert_eq!(err.kind(), std::io::ErrorKind::WouldBlock, "{err}");
                return queued;
            }
        }
        assert!(queued < 100_000, "the queue never filled");
    }
}

#[test]
fn a_full_queue_is_reported_not_waited_for_and_room_is_used_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notify.sock");
    let reader = UnixDatagram::bind(&path).unwrap();
    let queued = fill(path.as_os_str());
    assert!(queued > 0);
    // A bounded wait gives up too.
    let err = send_to(
        path.as_os_str(),
        b"READY=1\n",
        Some(Duration::from_millis(10)),
    )
    .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::WouldBlock, "{err}");
    let mut buf = [0u8; 64];
    let n = reader.recv(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"STATUS=x\n");
    send_to(
        path.as_os_str(),
        b"READY=1\n",
        Some(Duration::from_secs(60)),
    )
    .unwrap();
}

#[test]
fn an_abstract_socket_is_reached_by_its_at_name() {
    let name = format!("gpuslice-notify-test-{}", std::process::id());
    let address =
        <std::os::unix::net::SocketAddr as std::os::linux::net::SocketAddrExt>::from_abstract_name(
            name.as_bytes(),
        )
        .unwrap();
    let reader = UnixDatagram::bind_addr(&address).unwrap();
    send_to(
        std::ffi::OsStr::new(&format!("@{name}")),
        b"READY=1\n",
        None,
    )
    .unwrap();
    let mut buf = [0u8; 64];
    let n = reader.recv(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"READY=1\n");
}

#[test]
fn a_missing_socket_is_an_error_not_a_wait() {
    let dir = tempfile::tempdir().unwrap();
    let err = send_to(dir.path().join("none").as_os_str(), b"READY=1\n", None).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound, "{err}");
}

//! The cluster around the monitored node, as the monitoring test's
//! Prometheus sees it, on one loopback HTTP listener:
//!
//! - **The API server's Nodes**, for the shipped scrape job's Kubernetes
//!   service discovery (`role: node`). Prometheus 3.5's client-go asks with
//!   a streaming list (`watch=true&sendInitialEvents=true`): it is answered
//!   with an `ADDED` event per Node and the `BOOKMARK` annotated
//!   `k8s.io/initial-events-end`, and the watch then stays open; a plain
//!   list gets a NodeList.
//! - **kube-state-metrics' `kube_pod_resourceclaim_info`** at `/metrics`,
//!   made from Pods by kube-state-metrics v2.20.0's rule
//!   (internal/store/pod.go): one series per `spec.resourceClaims` entry,
//!   labelled `namespace`, `pod`, `uid`, `claim_name` (the pod's name for
//!   the claim), `resourceclaim_name` (the ResourceClaim: named directly,
//!   or for a template the name the kubelet wrote in
//!   `status.resourceClaimStatuses`) and `resourceclaim_template_name`.
//!
//! The server runs on the test's runtime and ends with it.

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A Node at `ip` (its InternalIP).
pub fn node(name: &str, ip: &str) -> Value {
    json!({
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {
            "name": name,
            "uid": format!("{name}-uid"),
            "resourceVersion": "1",
            "labels": {"kubernetes.io/hostname": name},
        },
        "status": {
            "addresses": [
                {"type": "InternalIP", "address": ip},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        },
    })
}

/// A Pod in `namespace` whose container asks for the claim `reference`
/// made from the template `template`, resolved to the ResourceClaim
/// `claim` as the kubelet writes it in the Pod's status.
pub fn pod(namespace: &str, name: &str, reference: &str, template: &str, claim: &str) -> Value {
    json!({
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"namespace": namespace, "name": name, "uid": format!("{name}-uid")},
        "spec": {
            "resourceClaims": [{"name": reference, "resourceClaimTemplateName": template}],
        },
        "status": {
            "resourceClaimStatuses": [{"name": reference, "resourceClaimName": claim}],
        },
    })
}

/// kube-state-metrics' `kube_pod_resourceclaim_info` of `pods`, in the
/// Prometheus text format.
pub fn resourceclaim_info(pods: &[Value]) -> String {
    let mut text = String::from(
        "# HELP kube_pod_resourceclaim_info Information about a DRA ResourceClaim referenced \
         by a pod, one series per pod.spec.resourceClaims entry.\n\
         # TYPE kube_pod_resourceclaim_info gauge\n",
    );
    for pod in pods {
        let meta = &pod["metadata"];
        let text_of = |v: &Value| v.as_str().unwrap_or_default().to_owned();
        let resolved = |reference: &str| {
            pod["status"]["resourceClaimStatuses"]
                .as_array()
                .and_then(|all| all.iter().find(|s| s["name"] == reference))
                .map(|s| text_of(&s["resourceClaimName"]))
                .unwrap_or_default()
        };
        for entry in pod["spec"]["resourceClaims"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let reference = text_of(&entry["name"]);
            let template = text_of(&entry["resourceClaimTemplateName"]);
            let claim = match entry["resourceClaimName"].as_str() {
                Some(name) => name.to_owned(),
                None if !template.is_empty() => resolved(&reference),
                None => continue,
            };
            text.push_str(&format!(
                "kube_pod_resourceclaim_info{{namespace=\"{}\",pod=\"{}\",uid=\"{}\",\
                 claim_name=\"{reference}\",resourceclaim_name=\"{claim}\",\
                 resourceclaim_template_name=\"{template}\"}} 1\n",
                text_of(&meta["namespace"]),
                text_of(&meta["name"]),
                text_of(&meta["uid"]),
            ));
        }
    }
    text
}

/// Serves `nodes` and `metrics` on a loopback port; its `host:port`.
pub async fn serve(nodes: Vec<Value>, metrics: String) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address").to_string();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(answer(stream, nodes.clone(), metrics.clone()));
        }
    });
    addr
}

/// Answers one connection's one request.
async fn answer(mut stream: TcpStream, nodes: Vec<Value>, metrics: String) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte).await {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let head = String::from_utf8_lossy(&head);
    let path = head
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_owned();
    if path.starts_with("/metrics") {
        let reply = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{metrics}",
            metrics.len()
        );
        drop(stream.write_all(reply.as_bytes()).await);
    } else if path.starts_with("/api/v1/nodes") && path.contains("watch=true") {
        watch(stream, &nodes, path.contains("sendInitialEvents=true")).await;
    } else if path.starts_with("/api/v1/nodes") {
        let list = json!({
            "kind": "NodeList",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": "1"},
            "items": nodes,
        })
        .to_string();
        let reply = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{list}",
            list.len()
        );
        drop(stream.write_all(reply.as_bytes()).await);
    } else {
        let reply = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        drop(stream.write_all(reply.as_bytes()).await);
    }
}

/// A watch of Nodes: with `initial`, every Node as `ADDED` and the bookmark
/// that ends the initial events; then open, with no change, until the
/// client leaves.
async fn watch(mut stream: TcpStream, nodes: &[Value], initial: bool) {
    let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                Transfer-Encoding: chunked\r\n\r\n";
    if stream.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    let mut events: Vec<Value> = Vec::new();
    if initial {
        events.extend(nodes.iter().map(|n| json!({"type": "ADDED", "object": n})));
        events.push(json!({
            "type": "BOOKMARK",
            "object": {
                "kind": "Node",
                "apiVersion": "v1",
                "metadata": {
                    "resourceVersion": "1",
                    "annotations": {"k8s.io/initial-events-end": "true"},
                },
            },
        }));
    }
    for event in events {
        let line = format!("{event}\n");
        let chunk = format!("{:x}\r\n{line}\r\n", line.len());
        if stream.write_all(chunk.as_bytes()).await.is_err() {
            return;
        }
    }
    let mut sink = [0u8; 64];
    while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
}

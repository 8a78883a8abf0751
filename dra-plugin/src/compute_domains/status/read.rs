//! A ComputeDomain from the cache, read into what a node's turn needs: its
//! identity, whether it is being deleted, `spec.numNodes`, the template to
//! make for it, and its status read leniently (`status.status`, and
//! `status.nodes` through gpuslice-compute-domain's `membership::read`:
//! capped, a bad entry skipped, never the whole object refused for one).

use gpuslice_compute_domain::API_VERSION;
use gpuslice_compute_domain::api::{ComputeDomain, KIND, Readiness};
use gpuslice_compute_domain::membership::{self, Entries};
use gpuslice_compute_domain::template::owned_template;
use k8s_openapi::api::resource::v1::ResourceClaimTemplate;
use kube::api::DynamicObject;
use serde_json::Value;

/// A ComputeDomain as a node's turn sees it.
#[derive(Debug, Clone)]
pub struct DomainSeen {
    pub uid: String,
    pub namespace: String,
    pub name: String,
    /// Its resourceVersion as a number (etcd's are), when it is one.
    pub version: Option<u64>,
    /// It has a deletionTimestamp.
    pub deleting: bool,
    /// `spec.numNodes`.
    pub num_nodes: i64,
    /// `status.status`, when it is one.
    pub status: Option<Readiness>,
    /// `status.nodes`, read.
    pub entries: Entries,
    /// The workload template gpuslice makes for it, or why none can be.
    pub template: Result<ResourceClaimTemplate, String>,
}

impl DomainSeen {
    /// `namespace/name`.
    pub fn id(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// The (namespace, name) of its template, when it names one.
    pub fn template_key(&self) -> Option<(String, String)> {
        let template = self.template.as_ref().ok()?;
        Some((
            self.namespace.clone(),
            template.metadata.name.clone().unwrap_or_default(),
        ))
    }
}

/// `object` read; why not, naming it, when its spec does not read.
pub fn read_domain(object: &DynamicObject) -> Result<DomainSeen, String> {
    let meta = &object.metadata;
    let namespace = meta.namespace.clone().unwrap_or_default();
    let name = meta.name.clone().unwrap_or_default();
    let uid = meta.uid.clone().unwrap_or_default();
    let id = format!("ComputeDomain {namespace}/{name}");
    if uid.is_empty() {
        return Err(format!("{id} has no uid"));
    }
    // A list's items may lack apiVersion and kind; the resource says them.
    let spec = serde_json::json!({
        "apiVersion": API_VERSION, "kind": KIND,
        "metadata": serde_json::to_value(meta).map_err(|e| format!("{id}: {e}"))?,
        "spec": object.data.get("spec").cloned().unwrap_or(Value::Null),
    });
    let domain: ComputeDomain =
        serde_json::from_value(spec).map_err(|e| format!("{id} does not read: {e}"))?;
    let status = object.data.get("status");
    let readiness = status
        .and_then(|s| s.get("status"))
        .and_then(|s| serde_json::from_value::<Readiness>(s.clone()).ok());
    Ok(DomainSeen {
        version: meta
            .resource_version
            .as_deref()
            .and_then(|v| v.parse().ok()),
        deleting: meta.deletion_timestamp.is_some(),
        num_nodes: domain.spec.num_nodes,
        status: readiness,
        entries: membership::read(status.and_then(|s| s.get("nodes"))),
        template: owned_template(&domain).map_err(|e| format!("{id}: {e}")),
        uid,
        namespace,
        name,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::read_domain;

    #[test]
    fn a_domain_reads_with_its_bad_entries_skipped_and_its_template() {
        let object = serde_json::from_value(json!({
            "metadata": {"name": "cd", "namespace": "ml", "uid": "5b9c2d0e-7a41-4f3b-9c8d-2e6f1a0b3c4d",
                         "resourceVersion": "42"},
            "spec": {"numNodes": 2, "channel": {"resourceClaimTemplate": {"name": "cd-channel"}}},
            "status": {"status": "Ready", "nodes": [
                {"name": "n1", "ipAddress": "10.0.0.1", "cliqueID": "c.1", "index": 0, "status": "Ready"},
                {"name": "n2", "ipAddress": "x", "cliqueID": "c.1", "index": 1, "status": "Ready"}]}
        }))
        .expect("object");
        let seen = read_domain(&object).expect("reads");
        assert_eq!(
            (seen.version, seen.num_nodes, seen.deleting),
            (Some(42), 2, false)
        );
        assert_eq!(seen.entries.usable.len(), 1);
        assert_eq!(seen.entries.skipped.len(), 1);
        assert_eq!(
            seen.template_key(),
            Some(("ml".to_owned(), "cd-channel".to_owned()))
        );
        let broken = serde_json::from_value(json!({
            "metadata": {"name": "bad", "namespace": "ml", "uid": "u"},
            "spec": {"numNodes": "many"}
        }))
        .expect("object");
        let why = read_domain(&broken).expect_err("no spec");
        assert!(why.contains("ComputeDomain ml/bad does not read"), "{why}");
    }
}

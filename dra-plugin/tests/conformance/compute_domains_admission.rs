//! The compute-domains identity held to its own node, through the
//! ComputeDomain API server ([`crate::fake_compute_domains`]) as a plugin meets it:
//! one node's token driven directly (kube's client, the plugin's own
//! writes), each write judged by the packaged role and by Kubernetes' own
//! evaluation of the packaged admission policies. Refused: another node's
//! entry, an entry whose address is not an IP, a list past its cap,
//! another node's Lease, the entry of a Node that still exists; a role
//! verb the plugin has no business with. Allowed: its own entry, and the
//! entry of a Node that is gone, removed the way the plugin removes it.

use gpuslice_compute_domain::api::{ComputeDomainNode, Readiness};
use gpuslice_compute_domain::coordinate::Apply;
use gpuslice_compute_domain::membership;
use gpuslice_dra_plugin::compute_domains::status::kube_api::{
    DomainWrites, KubeDomains, WriteError,
};
use gpuslice_dra_plugin::compute_domains::status::read::{DomainSeen, read_domain};
use k8s_openapi::api::resource::v1::ResourceClaimTemplate;
use kube::Api;
use kube::api::DeleteParams;
use serde_json::{Value, json};

use crate::admission;
use crate::fake_compute_domains::{FakeDomainsApi, Kind};

const UID: &str = "d0000000-0000-4000-8000-0000000000a1";
const CLIQUE: &str = "4f3c2b1a-5d6e-4f70-8a9b-0c1d2e3f4a5b.1";

fn entry(name: &str, ip: &str, index: i64) -> Value {
    json!({"name": name, "ipAddress": ip, "cliqueID": CLIQUE, "index": index, "status": "NotReady"})
}

fn client(api: &FakeDomainsApi, token: &str) -> kube::Client {
    let mut config = kube::Config::new(api.url.parse().expect("url"));
    config.auth_info.token = Some(token.to_owned().into());
    kube::Client::try_from(config).expect("kube client")
}

fn seen(api: &FakeDomainsApi) -> DomainSeen {
    let object = api
        .state()
        .object(Kind::Domain, "ml", "training")
        .cloned()
        .expect("domain");
    read_domain(&serde_json::from_value(object).expect("object")).expect("reads")
}

fn own(name: &str, ip: &str, index: i64) -> Apply {
    Apply {
        entry: Some(ComputeDomainNode {
            name: name.to_owned(),
            ip_address: ip.to_owned(),
            clique_id: CLIQUE.to_owned(),
            index,
            status: Readiness::NotReady,
        }),
        status: Readiness::NotReady,
    }
}

fn refused(result: Result<Option<u64>, WriteError>, code: u16, says: &str) {
    let err = result.expect_err("refused");
    assert_eq!(err.code, Some(code), "{err}");
    assert!(err.message.contains(says), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(
    clippy::too_many_lines,
    reason = "one node's writes, read top to bottom"
)]
async fn a_nodes_compute_domains_token_writes_its_own_entry_only() {
    let Some(policies) =
        admission::available("a_nodes_compute_domains_token_writes_its_own_entry_only")
    else {
        return;
    };
    let api = FakeDomainsApi::start(Some(policies));
    let token = api.mutate(|s| {
        for node in ["node-2", "node-3"] {
            s.put_node(node);
        }
        let domain = json!({"apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain",
            "metadata": {"name": "training", "namespace": "ml"},
            "spec": {"numNodes": 2, "channel": {"resourceClaimTemplate": {"name": "training-channel"}}},
            "status": {"status": "NotReady", "nodes": [entry("node-2", "10.0.0.2", 1), entry("node-9", "10.0.0.9", 2)]}});
        s.put_domain(domain, UID);
        s.put_node("node-1")
    });
    let one = KubeDomains::new(client(&api, &token), "node-1", "gpuslice-system");

    // Its own entry: admitted.
    one.apply(&seen(&api), &own("node-1", "10.0.0.1", 0))
        .await
        .expect("its own entry");
    // Another node's: 403, naming the policy's reason.
    refused(
        one.apply(&seen(&api), &own("node-2", "10.0.0.7", 1)).await,
        403,
        "ValidatingAdmissionPolicy 'gpuslice-compute-domain-status'",
    );
    // An address that is not one: 422.
    refused(
        one.apply(&seen(&api), &own("node-1", "compute-domain-daemon-0000", 0))
            .await,
        422,
        "is not an IP address",
    );
    // Ready while an entry is not: 422.
    let mut ready = own("node-1", "10.0.0.1", 0);
    ready.status = Readiness::Ready;
    refused(
        one.apply(&seen(&api), &ready).await,
        422,
        "may be Ready only while every entry",
    );
    // The entry of a Node that exists: 403; of one that is gone (node-9):
    // admitted.
    let domain = seen(&api);
    let position = |name: &str| {
        domain
            .entries
            .get(name)
            .map(|p| p.position)
            .expect("listed")
    };
    refused(
        one.remove_entries(
            &domain,
            &[(position("node-2"), "node-2".to_owned())],
            Readiness::NotReady,
        )
        .await,
        403,
        "that Node exists",
    );
    one.remove_entries(
        &domain,
        &[(position("node-9"), "node-9".to_owned())],
        Readiness::NotReady,
    )
    .await
    .expect("a gone Node's entry");

    // A list past its cap: 422.
    api.mutate(|s| {
        let mut domain = s
            .object(Kind::Domain, "ml", "training")
            .cloned()
            .expect("domain");
        let many: Vec<Value> = (0..membership::MAX_ENTRIES)
            .map(|i| {
                entry(
                    &format!("n{i}"),
                    "10.0.1.1",
                    i64::try_from(i % 18).expect("small"),
                )
            })
            .collect();
        domain["status"]["nodes"] = Value::Array(many);
        s.put_domain(domain, UID);
    });
    refused(
        one.apply(&seen(&api), &own("node-1", "10.0.0.1", 0)).await,
        422,
        "at most 36",
    );

    // Its own Lease: admitted; another node's: 403. A template not owned by
    // its domain: 422. A verb outside the role: 403.
    one.create_lease(UID, CLIQUE).await.expect("its own Lease");
    let two_token = api
        .state()
        .tokens
        .iter()
        .find(|(_, u)| u.extra.values().any(|v| v == &["node-2".to_owned()]))
        .map(|(t, _)| t.clone())
        .expect("node-2's token");
    let ones_lease = api
        .state()
        .leases()
        .values()
        .next()
        .cloned()
        .expect("node-1's Lease");
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(client(&api, &two_token), "gpuslice-system");
    let name = ones_lease["metadata"]["name"]
        .as_str()
        .expect("name")
        .to_owned();
    let err = leases
        .delete(&name, &DeleteParams::default())
        .await
        .expect_err("not node-2's");
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 403),
        "{err}"
    );
    let template: ResourceClaimTemplate = serde_json::from_value(json!({
        "metadata": {"name": "loose", "namespace": "ml", "labels": {"resource.nvidia.com/computeDomain": UID}},
        "spec": {"spec": {"devices": {"requests": [{"name": "channel",
            "exactly": {"deviceClassName": "compute-domain-default-channel.nvidia.com"}}]}}}
    }))
    .expect("template");
    let err = one.create_template(&template).await.expect_err("no owner");
    assert_eq!(err.code, Some(422), "{err}");
    let templates: Api<ResourceClaimTemplate> = Api::namespaced(client(&api, &token), "ml");
    let err = templates
        .delete("other", &DeleteParams::default())
        .await
        .expect_err("no delete verb");
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 403),
        "{err}"
    );
    let state = api.state();
    assert!(state.admitted >= 8, "{}", state.admitted);
}

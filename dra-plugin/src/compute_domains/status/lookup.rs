//! The ComputeDomain a channel claim names, found for its prepare: by the
//! uid of the claim's `ComputeDomainChannelConfig`, from the watch cache,
//! else (a domain created a moment ago, or a cache not synced yet) from one
//! list of every ComputeDomain. Where it is decides whether the claim may
//! have a channel: only in the claim's own namespace, and not while it is
//! being deleted (one tenant per domain, as NVIDIA's plugin rules).

use kube::Api;
use kube::api::{DynamicObject, ListParams};

use super::cache::{Caches, compute_domains};

/// Where a domain was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// In the claim's namespace, under this name.
    Here { name: String },
    /// In the claim's namespace, being deleted.
    Deleting { name: String },
    /// Not in the claim's namespace, but in these.
    Elsewhere(Vec<String>),
    /// Nowhere.
    Missing,
}

/// Finds domains for prepares.
#[derive(Clone)]
pub struct Lookup {
    caches: Caches,
    client: kube::Client,
}

impl std::fmt::Debug for Lookup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lookup").finish_non_exhaustive()
    }
}

/// Where `uid` is among `objects`, for a claim in `namespace`.
fn place<'a>(
    objects: impl IntoIterator<Item = &'a DynamicObject>,
    uid: &str,
    namespace: &str,
) -> Found {
    let mut elsewhere = Vec::new();
    for object in objects {
        let meta = &object.metadata;
        if meta.uid.as_deref() != Some(uid) {
            continue;
        }
        let ns = meta.namespace.clone().unwrap_or_default();
        if ns != namespace {
            elsewhere.push(ns);
            continue;
        }
        let name = meta.name.clone().unwrap_or_default();
        return if meta.deletion_timestamp.is_some() {
            Found::Deleting { name }
        } else {
            Found::Here { name }
        };
    }
    if elsewhere.is_empty() {
        Found::Missing
    } else {
        elsewhere.sort();
        elsewhere.dedup();
        Found::Elsewhere(elsewhere)
    }
}

impl Lookup {
    /// Over `caches`, listing with `client` when they lack the domain.
    pub fn new(caches: Caches, client: kube::Client) -> Self {
        Self { caches, client }
    }

    /// Where the domain `uid` is, for a claim in `namespace`.
    pub async fn find(&self, uid: &str, namespace: &str) -> Result<Found, kube::Error> {
        if self.caches.domains_synced() {
            let cached = self.caches.domain_objects();
            let found = place(cached.iter().map(AsRef::as_ref), uid, namespace);
            if found != Found::Missing {
                return Ok(found);
            }
        }
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &compute_domains());
        let list = api.list(&ListParams::default()).await?;
        Ok(place(&list.items, uid, namespace))
    }
}

#[cfg(test)]
mod tests {
    use kube::api::DynamicObject;
    use serde_json::json;

    use super::{Found, place};

    fn domain(ns: &str, name: &str, uid: &str, deleting: bool) -> DynamicObject {
        let mut meta = json!({"namespace": ns, "name": name, "uid": uid});
        if deleting {
            meta["deletionTimestamp"] = json!("2026-12-05T00:00:00Z");
        }
        serde_json::from_value(json!({"metadata": meta})).expect("object")
    }

    #[test]
    fn a_domain_is_found_only_in_the_claims_namespace_and_not_while_deleted() {
        let all = [
            domain("a", "train", "u1", false),
            domain("b", "job", "u2", true),
            domain("c", "x", "u3", false),
            domain("d", "y", "u3", false),
        ];
        assert_eq!(
            place(&all, "u1", "a"),
            Found::Here {
                name: "train".to_owned()
            }
        );
        assert_eq!(
            place(&all, "u2", "b"),
            Found::Deleting {
                name: "job".to_owned()
            }
        );
        assert_eq!(
            place(&all, "u3", "a"),
            Found::Elsewhere(vec!["c".to_owned(), "d".to_owned()])
        );
        assert_eq!(place(&all, "u9", "a"), Found::Missing);
    }
}

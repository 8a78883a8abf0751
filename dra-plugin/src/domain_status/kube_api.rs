//! The round's API server over kube: ComputeDomains as dynamic objects
//! (`resource.nvidia.com/v1beta1`, read into gpuslice-compute-domain's
//! types), their status replaced through the `status` subresource with the
//! resourceVersion read, the workload ResourceClaimTemplates (made, listed
//! by the domain label, their finalizer cleared and deleted), the Nodes'
//! names.

use std::collections::BTreeSet;

use gpuslice_compute_domain::COMPUTE_DOMAIN_LABEL;
use gpuslice_compute_domain::api::ComputeDomain;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::resource::v1::ResourceClaimTemplate;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams,
};
use kube::{Client, Error};

use super::round::{DomainApi, WriteError};

/// The API server as the round uses it.
#[derive(Clone)]
pub struct KubeDomains {
    client: Client,
    resource: ApiResource,
}

impl std::fmt::Debug for KubeDomains {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeDomains")
            .field("resource", &self.resource.plural)
            .finish_non_exhaustive()
    }
}

impl KubeDomains {
    /// Over `client`.
    pub fn new(client: Client) -> Self {
        let gvk = GroupVersionKind::gvk("resource.nvidia.com", "v1beta1", "ComputeDomain");
        Self {
            client,
            resource: ApiResource::from_gvk_with_plural(&gvk, "computedomains"),
        }
    }

    fn in_namespace(&self, namespace: &str) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), namespace, &self.resource)
    }
}

fn read(object: DynamicObject) -> Result<ComputeDomain, String> {
    let value = serde_json::to_value(object).map_err(|e| e.to_string())?;
    serde_json::from_value(value).map_err(|e| format!("not a ComputeDomain: {e}"))
}

fn text(err: &Error) -> String {
    match err {
        Error::Api(status) => format!("{} ({})", status.message, status.code),
        other => other.to_string(),
    }
}

fn is_code(err: &Error, code: u16) -> bool {
    matches!(err, Error::Api(status) if status.code == code)
}

impl DomainApi for KubeDomains {
    async fn domains(&self) -> Result<Vec<ComputeDomain>, String> {
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &self.resource);
        let list = api
            .list(&ListParams::default())
            .await
            .map_err(|e| text(&e))?;
        // One that does not read is left out, not the round.
        Ok(list
            .items
            .into_iter()
            .filter_map(|o| read(o).ok())
            .collect())
    }

    async fn domain(&self, namespace: &str, name: &str) -> Result<Option<ComputeDomain>, String> {
        match self.in_namespace(namespace).get_opt(name).await {
            Ok(Some(object)) => read(object).map(Some),
            Ok(None) => Ok(None),
            Err(err) => Err(text(&err)),
        }
    }

    async fn write_status(&self, domain: &ComputeDomain) -> Result<(), WriteError> {
        let namespace = domain.metadata.namespace.clone().unwrap_or_default();
        let name = domain.metadata.name.clone().unwrap_or_default();
        let object: DynamicObject = serde_json::to_value(domain)
            .and_then(serde_json::from_value)
            .map_err(|e| WriteError::Failed(e.to_string()))?;
        match self
            .in_namespace(&namespace)
            .replace_status(&name, &PostParams::default(), &object)
            .await
        {
            Ok(_) => Ok(()),
            Err(err) if is_code(&err, 409) => Err(WriteError::Conflict),
            Err(err) => Err(WriteError::Failed(text(&err))),
        }
    }

    async fn create_template(&self, template: &ResourceClaimTemplate) -> Result<bool, String> {
        let namespace = template.metadata.namespace.clone().unwrap_or_default();
        let api: Api<ResourceClaimTemplate> = Api::namespaced(self.client.clone(), &namespace);
        match api.create(&PostParams::default(), template).await {
            Ok(_) => Ok(true),
            Err(err) if is_code(&err, 409) => Ok(false),
            Err(err) => Err(text(&err)),
        }
    }

    async fn domain_templates(&self) -> Result<Vec<(String, String, String)>, String> {
        let api: Api<ResourceClaimTemplate> = Api::all(self.client.clone());
        let list = api
            .list_metadata(&ListParams::default().labels(COMPUTE_DOMAIN_LABEL))
            .await
            .map_err(|e| text(&e))?;
        Ok(list
            .items
            .into_iter()
            .filter_map(|t| {
                let uid = t
                    .metadata
                    .labels
                    .as_ref()?
                    .get(COMPUTE_DOMAIN_LABEL)?
                    .clone();
                Some((t.metadata.namespace?, t.metadata.name?, uid))
            })
            .collect())
    }

    async fn remove_template(&self, namespace: &str, name: &str) -> Result<(), String> {
        let api: Api<ResourceClaimTemplate> = Api::namespaced(self.client.clone(), namespace);
        let clear = Patch::Merge(serde_json::json!({"metadata": {"finalizers": null}}));
        match api.patch(name, &PatchParams::default(), &clear).await {
            Err(err) if is_code(&err, 404) => return Ok(()),
            Err(err) => return Err(text(&err)),
            Ok(_) => {}
        }
        match api.delete(name, &DeleteParams::default()).await {
            Err(err) if !is_code(&err, 404) => Err(text(&err)),
            _ => Ok(()),
        }
    }

    async fn node_names(&self) -> Result<BTreeSet<String>, String> {
        let api: Api<Node> = Api::all(self.client.clone());
        let list = api
            .list_metadata(&ListParams::default())
            .await
            .map_err(|e| text(&e))?;
        Ok(list
            .items
            .into_iter()
            .filter_map(|n| n.metadata.name)
            .collect())
    }
}

//! Every ResourceClaim of the cluster, across namespaces, listed in pages
//! (`limit` and `continue`, as kubectl does) so that a large cluster never
//! answers one huge list.

use k8s_openapi::api::resource::v1::ResourceClaim;
use kube::api::{Api, ListParams};

/// Claims asked for per page (kubectl's default chunk size).
pub const PAGE: u32 = 500;

/// Every claim, page after page until the server gives no `continue`.
pub async fn all_claims(client: kube::Client) -> Result<Vec<ResourceClaim>, kube::Error> {
    let api: Api<ResourceClaim> = Api::all(client);
    let mut claims = Vec::new();
    let mut params = ListParams::default().limit(PAGE);
    loop {
        let page = api.list(&params).await?;
        claims.extend(page.items);
        match page.metadata.continue_.filter(|token| !token.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(claims),
        }
    }
}

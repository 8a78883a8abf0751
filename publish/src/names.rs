//! Kubernetes name rules the shim must respect before the API server does:
//! DNS labels (device and counter-set names), DNS subdomains (driver, node
//! and pool names) and resource.k8s.io qualified names (attribute, capacity
//! and counter keys). Pure.

/// Longest DNS label.
pub const MAX_DNS_LABEL: usize = 63;
/// Longest DNS subdomain.
pub const MAX_DNS_SUBDOMAIN: usize = 253;
/// Longest C identifier in a qualified name.
pub const MAX_IDENTIFIER: usize = 32;
/// Longest domain prefix of a qualified name (resource.k8s.io/v1 allows 63).
pub const MAX_QUALIFIED_DOMAIN: usize = 63;

/// RFC 1123 label: 1-63 of `[a-z0-9-]`, alphanumeric at both ends.
pub fn is_dns_label(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= MAX_DNS_LABEL
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
}

/// RFC 1123 subdomain: dot-separated labels, at most 253 characters.
pub fn is_dns_subdomain(name: &str) -> bool {
    name.len() <= MAX_DNS_SUBDOMAIN && name.split('.').all(is_dns_label)
}

/// A C identifier of at most 32 characters: `[A-Za-z_][A-Za-z0-9_]*`.
pub fn is_c_identifier(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= MAX_IDENTIFIER
        && bytes
            .first()
            .is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_')
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'_')
}

/// A resource.k8s.io qualified name: a C identifier, optionally prefixed by a
/// DNS subdomain of at most 63 characters and `/`.
pub fn is_qualified_name(name: &str) -> bool {
    match name.split_once('/') {
        None => is_c_identifier(name),
        Some((domain, id)) => {
            domain.len() <= MAX_QUALIFIED_DOMAIN && is_dns_subdomain(domain) && is_c_identifier(id)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{is_c_identifier, is_dns_label, is_dns_subdomain, is_qualified_name};

    #[test]
    fn dns_labels() {
        for good in ["gpu-0", "a", "0", "gpu-0-mig-1g10gb-0", &"a".repeat(63)] {
            assert!(is_dns_label(good), "{good}");
        }
        for bad in ["", "-a", "a-", "Gpu-0", "1g.10gb", "a_b", &"a".repeat(64)] {
            assert!(!is_dns_label(bad), "{bad}");
        }
    }

    #[test]
    fn dns_subdomains() {
        for good in ["gpu.nvidia.com", "node-1", "ip-10-0-0-1.ec2.internal"] {
            assert!(is_dns_subdomain(good), "{good}");
        }
        for bad in ["", "gpu..com", ".a", "a.", "A.com", &"a.".repeat(127)] {
            assert!(!is_dns_subdomain(bad), "{bad}");
        }
    }

    #[test]
    fn qualified_names() {
        for good in [
            "productName",
            "memory",
            "resource.kubernetes.io/pciBusID",
            "gpu.nvidia.com/uuid",
            "_x",
        ] {
            assert!(is_qualified_name(good), "{good}");
        }
        for bad in [
            "",
            "memory-slice-0",
            "1abc",
            "a/b/c",
            "/name",
            "Bad.Domain/name",
            &"a".repeat(33),
        ] {
            assert!(!is_qualified_name(bad), "{bad}");
        }
        assert!(is_c_identifier(&"a".repeat(32)));
    }
}

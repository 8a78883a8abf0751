//! One published device as a DRA selector sees it: the `device` variable of
//! Kubernetes' DRA CEL environment. Pure.
//!
//! Rules (dynamic-resource-allocation/cel/compile.go): an attribute or
//! capacity name without a domain ("productName") gets the driver name as its
//! domain, so it is `device.attributes["gpu.nvidia.com"].productName`; one
//! with a domain ("resource.kubernetes.io/pciBusID") is split at the "/".
//! Attribute values are int, bool, string or version (a semver); capacities
//! are quantities. Looking up a domain the device has no attributes in gives
//! an empty map (so `device.attributes["other.com"].x` is a missing key, not a
//! missing domain); a missing name inside a domain is an error.

use std::collections::{BTreeMap, HashMap};

use cel::ExecutionError;
use cel::common::traits::{Container, Indexer, Iterable, Sizer};
use cel::common::types::{CelBool, CelInt, CelMap, CelMapKey, CelString, MAP_TYPE, Type};
use cel::common::value::{CowVal, Val};
use k8s_openapi::api::resource::v1::Device;

use crate::library::{QuantityVal, SemverVal};
use crate::quantity::Quantity;
use crate::version::Version;

/// An attribute value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attr {
    /// `int`.
    Int(i64),
    /// `bool`.
    Bool(bool),
    /// `string`.
    String(String),
    /// `version`.
    Version(Version),
}

impl Attr {
    /// The attribute's type as the DRA API names it.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Int(_) => "int",
            Self::Bool(_) => "bool",
            Self::String(_) => "string",
            Self::Version(_) => "version",
        }
    }
}

/// A device as a selector sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceView {
    /// The device's name in its slice.
    pub name: String,
    /// The driver.
    pub driver: String,
    /// Attributes by domain, then name.
    pub attributes: BTreeMap<String, BTreeMap<String, Attr>>,
    /// Capacities by domain, then name.
    pub capacity: BTreeMap<String, BTreeMap<String, Quantity>>,
    /// `allowMultipleAllocations`.
    pub allow_multiple_allocations: bool,
}

/// A device whose published data a selector cannot read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeviceError {
    /// A version attribute that is not semver.
    #[error("device {device}: attribute {name}: {error}")]
    Version {
        /// The device.
        device: String,
        /// The attribute.
        name: String,
        /// Why.
        error: crate::version::VersionError,
    },
    /// A capacity that is not a quantity.
    #[error("device {device}: capacity {name}: {error}")]
    Capacity {
        /// The device.
        device: String,
        /// The capacity.
        name: String,
        /// Why.
        error: crate::quantity::QuantityError,
    },
}

/// Splits a qualified name into domain and id, the driver being the default.
pub fn split_name<'a>(name: &'a str, driver: &'a str) -> (&'a str, &'a str) {
    name.split_once('/').unwrap_or((driver, name))
}

impl DeviceView {
    /// The view of a resource.k8s.io/v1 `Device` published by `driver`.
    pub fn new(device: &Device, driver: &str) -> Result<Self, DeviceError> {
        let mut attributes: BTreeMap<String, BTreeMap<String, Attr>> = BTreeMap::new();
        for (name, value) in device.attributes.iter().flatten() {
            let attr = if let Some(n) = value.int {
                Attr::Int(n)
            } else if let Some(b) = value.bool {
                Attr::Bool(b)
            } else if let Some(s) = &value.string {
                Attr::String(s.clone())
            } else if let Some(v) = &value.version {
                Attr::Version(
                    Version::parse(v, false).map_err(|error| DeviceError::Version {
                        device: device.name.clone(),
                        name: name.clone(),
                        error,
                    })?,
                )
            } else {
                continue;
            };
            let (domain, id) = split_name(name, driver);
            attributes
                .entry(domain.to_owned())
                .or_default()
                .insert(id.to_owned(), attr);
        }
        let mut capacity: BTreeMap<String, BTreeMap<String, Quantity>> = BTreeMap::new();
        for (name, value) in device.capacity.iter().flatten() {
            let q = Quantity::parse(&value.value.0).map_err(|error| DeviceError::Capacity {
                device: device.name.clone(),
                name: name.clone(),
                error,
            })?;
            let (domain, id) = split_name(name, driver);
            capacity
                .entry(domain.to_owned())
                .or_default()
                .insert(id.to_owned(), q);
        }
        Ok(Self {
            name: device.name.clone(),
            driver: driver.to_owned(),
            attributes,
            capacity,
            allow_multiple_allocations: device.allow_multiple_allocations.unwrap_or(false),
        })
    }

    /// The `device` variable.
    pub fn to_cel(&self) -> Box<dyn Val> {
        let attributes = domains(&self.attributes, |a| match a {
            Attr::Int(n) => Box::new(CelInt::from(*n)),
            Attr::Bool(b) => Box::new(CelBool::from(*b)),
            Attr::String(s) => Box::new(CelString::from(s.clone())),
            Attr::Version(v) => Box::new(SemverVal(v.clone())),
        });
        let capacity = domains(&self.capacity, |q| Box::new(QuantityVal(*q)));
        let fields: Vec<(&str, Box<dyn Val>)> = vec![
            ("driver", Box::new(CelString::from(self.driver.clone()))),
            ("attributes", Box::new(attributes)),
            ("capacity", Box::new(capacity)),
            (
                "allowMultipleAllocations",
                Box::new(CelBool::from(self.allow_multiple_allocations)),
            ),
        ];
        Box::new(string_map(fields))
    }
}

fn string_map<'a>(entries: impl IntoIterator<Item = (&'a str, Box<dyn Val>)>) -> CelMap<'static> {
    let map: HashMap<CelMapKey<'static>, Box<dyn Val>> = entries
        .into_iter()
        .map(|(k, v)| (CelMapKey::String(CelString::from(k.to_owned())), v))
        .collect();
    CelMap::from(map)
}

fn domains<T>(
    by_domain: &BTreeMap<String, BTreeMap<String, T>>,
    value: impl Fn(&T) -> Box<dyn Val>,
) -> DomainMap {
    let outer = by_domain.iter().map(|(domain, ids)| {
        let inner = string_map(ids.iter().map(|(id, v)| (id.as_str(), value(v))));
        (domain.as_str(), Box::new(inner) as Box<dyn Val>)
    });
    DomainMap {
        inner: string_map(outer),
        empty: CelMap::default(),
    }
}

/// The outer attributes or capacity map: an unknown domain reads as empty.
#[derive(Debug, Clone)]
struct DomainMap {
    inner: CelMap<'static>,
    empty: CelMap<'static>,
}

impl Val for DomainMap {
    fn get_type(&self) -> &Type {
        &MAP_TYPE
    }
    fn cel_type() -> &'static Type {
        &MAP_TYPE
    }
    fn equals(&self, other: &dyn Val) -> bool {
        self.inner.equals(other)
    }
    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
        Box::new(self.clone())
    }
    fn as_container(&self) -> Option<&dyn Container> {
        self.inner.as_container()
    }
    fn as_iterable<'b, 'v>(&'b self) -> Option<&'b (dyn Iterable + 'v)>
    where
        Self: 'v,
    {
        self.inner.as_iterable()
    }
    fn as_sizer(&self) -> Option<&dyn Sizer> {
        self.inner.as_sizer()
    }
    fn as_indexer<'b, 'v>(&'b self) -> Option<&'b (dyn Indexer + 'v)>
    where
        Self: 'v,
    {
        Some(self)
    }
}

impl Indexer for DomainMap {
    fn get<'b, 'v>(&'b self, idx: &dyn Val) -> Result<CowVal<'b, 'v>, ExecutionError>
    where
        Self: 'v,
    {
        match Indexer::get(&self.inner, idx) {
            Err(ExecutionError::NoSuchKey(_)) if idx.downcast_ref::<CelString<'_>>().is_some() => {
                Ok(CowVal::Borrowed(&self.empty))
            }
            other => other,
        }
    }

    fn steal<'v>(self: Box<Self>, idx: &dyn Val) -> Result<Box<dyn Val + 'v>, ExecutionError>
    where
        Self: 'v,
    {
        self.get(idx).map(CowVal::into_owned)
    }
}

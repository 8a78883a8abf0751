//! The claims made ready to allocate: every request (every `firstAvailable`
//! subrequest on its own) with its class's selectors then its own compiled,
//! its mode and count, tolerations and capacity requests; the claims'
//! constraints; and which device each request selects, evaluated when the
//! search first asks and remembered (upstream `validateDeviceRequest`,
//! `isSelectable`, `selectorsMatch`: a selector that fails on a device the
//! search considers aborts the allocation). Pure.

use std::cell::RefCell;
use std::collections::BTreeMap;

use k8s_openapi::api::resource::v1::{
    DeviceClass, DeviceSelector, DeviceSubRequest, DeviceToleration, ExactDeviceRequest,
    ResourceClaim,
};

use super::error::AllocateError;
use super::pool::Pool;
use crate::hints::Catalog;
use crate::matcher::{Outcome, Selector};
use crate::quantity::Quantity;

/// How many devices a request takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `ExactCount`.
    Exact(usize),
    /// `All`: every device it selects.
    All,
}

/// One request, or one subrequest of a `firstAvailable` request.
#[derive(Debug)]
pub struct RequestData<'a> {
    /// The claim's index.
    pub claim: usize,
    /// The request's name.
    pub base: &'a str,
    /// The subrequest's name.
    pub sub: Option<&'a str>,
    /// The DeviceClass.
    pub class: &'a str,
    /// Its index in the classes given.
    pub class_index: usize,
    /// (origin, index of the compiled selector): the class's, then its own.
    pub selectors: Vec<(String, usize)>,
    /// Whether the request has selectors of its own.
    pub own_selectors: bool,
    /// Mode and count.
    pub mode: Mode,
    /// `adminAccess`.
    pub admin: bool,
    /// `tolerations`.
    pub tolerations: &'a [DeviceToleration],
    /// `capacity.requests`, by name as written.
    pub capacity: Option<BTreeMap<String, Quantity>>,
}

impl RequestData<'_> {
    /// The name results carry: `request` or `request/subrequest`.
    pub fn name(&self) -> String {
        match self.sub {
            Some(sub) => format!("{}/{sub}", self.base),
            None => self.base.to_owned(),
        }
    }
}

/// A `matchAttribute` or `distinctAttribute` constraint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConstraintSpec {
    /// The requests it covers (empty: all).
    pub requests: Vec<String>,
    /// The fully qualified attribute.
    pub attribute: String,
    /// `distinctAttribute` rather than `matchAttribute`.
    pub distinct: bool,
}

/// One claim.
#[derive(Debug)]
pub struct ClaimData<'a> {
    /// `namespace/name` or `name`.
    pub label: String,
    /// The claim.
    pub claim: &'a ResourceClaim,
    /// Per request: indices of its request data (one, or one per subrequest).
    pub requests: Vec<Vec<usize>>,
    /// Per request: whether it has subrequests.
    pub has_subs: Vec<bool>,
    /// Its constraints.
    pub constraints: Vec<ConstraintSpec>,
}

/// Claims ready to allocate on a pool.
#[derive(Debug)]
pub struct Prepared<'a> {
    /// The pool.
    pub pool: Pool<'a>,
    /// The classes given.
    pub classes: &'a [DeviceClass],
    /// Every request and subrequest.
    pub requests: Vec<RequestData<'a>>,
    /// The claims, in order.
    pub claims: Vec<ClaimData<'a>>,
    compiled: Vec<Selector>,
    selected: RefCell<Vec<Vec<Option<bool>>>>,
}

/// The fields a request and a subrequest share.
struct Fields<'a> {
    class: &'a str,
    selectors: &'a [DeviceSelector],
    mode: Option<&'a str>,
    count: Option<i64>,
    admin: bool,
    tolerations: &'a [DeviceToleration],
    capacity: Option<&'a BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>,
}

impl<'a> Fields<'a> {
    fn exact(r: &'a ExactDeviceRequest) -> Self {
        Self {
            class: &r.device_class_name,
            selectors: r.selectors.as_deref().unwrap_or_default(),
            mode: r.allocation_mode.as_deref(),
            count: r.count,
            admin: r.admin_access == Some(true),
            tolerations: r.tolerations.as_deref().unwrap_or_default(),
            capacity: r.capacity.as_ref().and_then(|c| c.requests.as_ref()),
        }
    }

    fn sub(r: &'a DeviceSubRequest) -> Self {
        Self {
            class: &r.device_class_name,
            selectors: r.selectors.as_deref().unwrap_or_default(),
            mode: r.allocation_mode.as_deref(),
            count: r.count,
            admin: false,
            tolerations: r.tolerations.as_deref().unwrap_or_default(),
            capacity: r.capacity.as_ref().and_then(|c| c.requests.as_ref()),
        }
    }
}

/// The `namespace/name` of a claim, as upstream's messages name it.
pub fn claim_label(claim: &ResourceClaim) -> String {
    let name = claim.metadata.name.as_deref().unwrap_or("(unnamed)");
    match claim.metadata.namespace.as_deref() {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
        _ => name.to_owned(),
    }
}

struct Builder<'a> {
    classes: &'a [DeviceClass],
    catalog: Catalog,
    compiled: Vec<Selector>,
    by_text: BTreeMap<String, usize>,
    requests: Vec<RequestData<'a>>,
}

impl<'a> Builder<'a> {
    fn compile(
        &mut self,
        origin: String,
        s: &DeviceSelector,
    ) -> Result<(String, usize), AllocateError> {
        let Some(cel) = &s.cel else {
            return Err(AllocateError::NoExpression { origin });
        };
        if let Some(&at) = self.by_text.get(&cel.expression) {
            return Ok((origin, at));
        }
        let selector = Selector::compile(&cel.expression, &self.catalog).map_err(|error| {
            AllocateError::Compile {
                origin: origin.clone(),
                error,
            }
        })?;
        self.compiled.push(selector);
        let at = self.compiled.len() - 1;
        self.by_text.insert(cel.expression.clone(), at);
        Ok((origin, at))
    }

    fn request(
        &mut self,
        claim: (usize, &str),
        base: &'a str,
        sub: Option<&'a str>,
        fields: &Fields<'a>,
    ) -> Result<usize, AllocateError> {
        let name = sub.map_or_else(|| base.to_owned(), |s| format!("{base}/{s}"));
        let ctx = |c: &str| (c.to_owned(), name.clone());
        let class_index = self
            .classes
            .iter()
            .position(|c| c.metadata.name.as_deref() == Some(fields.class))
            .ok_or_else(|| {
                let (claim, request) = ctx(claim.1);
                AllocateError::UnknownClass {
                    claim,
                    request,
                    class: fields.class.to_owned(),
                }
            })?;
        let mut selectors = Vec::new();
        let class = &self.classes[class_index];
        for (i, s) in class.spec.selectors.iter().flatten().enumerate() {
            let origin = format!("class {}, selector {}", fields.class, i + 1);
            selectors.push(self.compile(origin, s)?);
        }
        for (i, s) in fields.selectors.iter().enumerate() {
            let origin = format!("claim {}, request {name}, selector {}", claim.1, i + 1);
            selectors.push(self.compile(origin, s)?);
        }
        let mode = match (
            fields.mode.unwrap_or("ExactCount"),
            fields.count.unwrap_or(1),
        ) {
            ("ExactCount", n) => match usize::try_from(n) {
                Ok(n) if n > 0 => Mode::Exact(n),
                _ => {
                    let (claim, request) = ctx(claim.1);
                    return Err(AllocateError::Count {
                        claim,
                        request,
                        count: n,
                    });
                }
            },
            ("All", _) => Mode::All,
            (other, _) => {
                let (claim, request) = ctx(claim.1);
                return Err(AllocateError::Mode {
                    claim,
                    request,
                    mode: other.to_owned(),
                });
            }
        };
        let capacity = match fields.capacity {
            Some(map) => Some(
                map.iter()
                    .map(|(k, q)| {
                        Quantity::parse(&q.0).map(|q| (k.clone(), q)).map_err(|e| {
                            let (claim, request) = ctx(claim.1);
                            AllocateError::Capacity {
                                claim,
                                request,
                                capacity: k.clone(),
                                problem: e.to_string(),
                            }
                        })
                    })
                    .collect::<Result<_, _>>()?,
            ),
            None => None,
        };
        self.requests.push(RequestData {
            claim: claim.0,
            base,
            sub,
            class: fields.class,
            class_index,
            selectors,
            own_selectors: !fields.selectors.is_empty(),
            mode,
            admin: fields.admin,
            tolerations: fields.tolerations,
            capacity,
        });
        Ok(self.requests.len() - 1)
    }

    fn claim(
        &mut self,
        index: usize,
        claim: &'a ResourceClaim,
    ) -> Result<ClaimData<'a>, AllocateError> {
        let label = claim_label(claim);
        let devices = claim.spec.devices.as_ref();
        let mut data = ClaimData {
            label: label.clone(),
            claim,
            requests: Vec::new(),
            has_subs: Vec::new(),
            constraints: Vec::new(),
        };
        for request in devices
            .and_then(|d| d.requests.as_ref())
            .into_iter()
            .flatten()
        {
            let base = request.name.as_str();
            let at = (index, label.as_str());
            let (ids, subs) = match (&request.exactly, &request.first_available) {
                (_, Some(subs)) if !subs.is_empty() => {
                    let ids = subs
                        .iter()
                        .map(|s| self.request(at, base, Some(&s.name), &Fields::sub(s)))
                        .collect::<Result<Vec<_>, _>>()?;
                    (ids, true)
                }
                (Some(exact), _) => (
                    vec![self.request(at, base, None, &Fields::exact(exact))?],
                    false,
                ),
                _ => {
                    return Err(AllocateError::RequestKind {
                        claim: label,
                        request: base.to_owned(),
                    });
                }
            };
            data.requests.push(ids);
            data.has_subs.push(subs);
        }
        for (i, c) in devices
            .and_then(|d| d.constraints.as_ref())
            .into_iter()
            .flatten()
            .enumerate()
        {
            let (attribute, distinct) = match (&c.match_attribute, &c.distinct_attribute) {
                (Some(a), _) => (a.clone(), false),
                (None, Some(a)) => (a.clone(), true),
                (None, None) => {
                    return Err(AllocateError::Constraint {
                        claim: label,
                        index: i,
                    });
                }
            };
            data.constraints.push(ConstraintSpec {
                requests: c.requests.clone().unwrap_or_default(),
                attribute,
                distinct,
            });
        }
        Ok(data)
    }
}

impl<'a> Prepared<'a> {
    /// Compiles the claims' selectors for `pool`; a request naming a class
    /// not in `classes`, or a selector Kubernetes refuses, is an error.
    pub fn new(
        pool: Pool<'a>,
        classes: &'a [DeviceClass],
        claims: &'a [ResourceClaim],
    ) -> Result<Self, AllocateError> {
        let views: Vec<_> = pool.devices.iter().map(|d| d.view.clone()).collect();
        let mut builder = Builder {
            classes,
            catalog: Catalog::new(&pool.driver, &views),
            compiled: Vec::new(),
            by_text: BTreeMap::new(),
            requests: Vec::new(),
        };
        let claims = claims
            .iter()
            .enumerate()
            .map(|(i, c)| builder.claim(i, c))
            .collect::<Result<Vec<_>, _>>()?;
        let (requests, compiled) = (builder.requests, builder.compiled);
        let selected = RefCell::new(vec![vec![None; pool.devices.len()]; requests.len()]);
        Ok(Self {
            pool,
            classes,
            requests,
            claims,
            compiled,
            selected,
        })
    }

    /// Whether request `r` selects device `d`: every selector of its class,
    /// then its own, in order; the first that fails decides.
    pub fn selects(&self, r: usize, d: usize) -> Result<bool, AllocateError> {
        if let Some(known) = self
            .selected
            .borrow()
            .get(r)
            .and_then(|v| v.get(d))
            .copied()
            .flatten()
        {
            return Ok(known);
        }
        let device = &self.pool.devices[d];
        let mut verdict = true;
        for (origin, at) in &self.requests[r].selectors {
            match self.compiled[*at].holds(&device.view) {
                Ok(true) => {}
                Ok(false) => {
                    verdict = false;
                    break;
                }
                Err(outcome) => {
                    let message = match outcome {
                        Outcome::Error { message, .. } => message,
                        other => format!("{other:?}"),
                    };
                    return Err(AllocateError::Evaluation {
                        origin: origin.clone(),
                        device: device.raw.name.clone(),
                        message,
                    });
                }
            }
        }
        if let Some(slot) = self
            .selected
            .borrow_mut()
            .get_mut(r)
            .and_then(|v| v.get_mut(d))
        {
            *slot = Some(verdict);
        }
        Ok(verdict)
    }
}

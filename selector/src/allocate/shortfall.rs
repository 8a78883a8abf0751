//! Why a claim cannot be allocated, in terms a user acts on: which request
//! falls short and by how much, which requests compete, which constraint
//! no set of devices meets; each serializable and said in one line. Pure.

use std::fmt;

use serde::Serialize;

/// When a judgement holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum When {
    /// With what other claims hold now.
    Now,
    /// With nothing held.
    EmptyNode,
}

impl When {
    fn words(self) -> &'static str {
        match self {
            Self::Now => "now",
            Self::EmptyNode => "on an empty node",
        }
    }
}

/// Why one device cannot be taken by a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "why", rename_all = "snake_case")]
pub enum Blocker {
    /// Another claim holds it.
    Held,
    /// A taint the request does not tolerate.
    Tainted {
        /// `key=value:Effect`.
        taint: String,
    },
    /// The counters it draws on are used up (a partitionable GPU).
    Counters,
    /// Its capacity cannot take the request.
    Capacity,
}

impl fmt::Display for Blocker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Held => f.write_str("held by another claim"),
            Self::Tainted { taint } => write!(f, "tainted {taint}, not tolerated"),
            Self::Counters => f.write_str("its GPU's counters are used up"),
            Self::Capacity => f.write_str("not enough capacity for the request"),
        }
    }
}

/// A device and why it cannot be taken.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Blocked {
    /// The device.
    pub device: String,
    /// Why.
    #[serde(flatten)]
    pub blocker: Blocker,
}

/// One reason a claim cannot be allocated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Shortfall {
    /// A request (or one `firstAvailable` alternative of it) cannot get its
    /// devices even alone.
    Devices {
        /// `request` or `request/subrequest`.
        request: String,
        /// Its DeviceClass.
        class: String,
        /// Whether it has selectors of its own.
        own_selectors: bool,
        /// `allocationMode: All`.
        all: bool,
        /// Devices it needs (All: every device it selects).
        needs: usize,
        /// Devices it selects on this node.
        exist: usize,
        /// Of those, the ones it could take on an empty node.
        usable: usize,
        /// Of those, the ones it could take now.
        free: usize,
        /// When `free` suffices: how many it can take together.
        #[serde(skip_serializing_if = "Option::is_none")]
        together: Option<usize>,
        /// The state judged.
        when: When,
        /// The devices it selects and cannot take then, and why.
        blocked: Vec<Blocked>,
    },
    /// Every request fits alone, not all together.
    Together {
        /// The requests.
        requests: Vec<String>,
        /// Devices they need together.
        needs: usize,
        /// Distinct devices they could take alone.
        free: usize,
        /// The state judged.
        when: When,
    },
    /// A constraint no set of devices meets.
    Constraint {
        /// The attribute.
        attribute: String,
        /// `distinctAttribute` rather than `matchAttribute`.
        distinct: bool,
        /// The requests it covers (empty: all).
        requests: Vec<String>,
        /// Devices it must hold.
        needs: usize,
        /// The most that meet it.
        best: usize,
        /// The value they share (matchAttribute).
        #[serde(skip_serializing_if = "Option::is_none")]
        value: Option<String>,
        /// The state judged.
        when: When,
    },
    /// The constraints each hold alone, not together.
    Constraints {
        /// Their attributes.
        attributes: Vec<String>,
    },
    /// The scheduler refuses the claim with this error.
    Refused {
        /// The error.
        message: String,
    },
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn selected_by(class: &str, own: bool) -> String {
    if own {
        format!("class {class} and its selectors")
    } else {
        format!("class {class}")
    }
}

fn blocked_list(blocked: &[Blocked]) -> String {
    blocked
        .iter()
        .map(|b| format!("{} ({})", b.device, b.blocker))
        .collect::<Vec<_>>()
        .join(", ")
}

fn requests_list(requests: &[String]) -> String {
    if requests.is_empty() {
        return "the claim's requests".to_owned();
    }
    let words = if requests.len() == 1 {
        "request"
    } else {
        "requests"
    };
    format!("{words} {}", requests.join(", "))
}

impl fmt::Display for Shortfall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Devices { all: true, .. } => self.fmt_all(f),
            Self::Devices {
                request,
                class,
                own_selectors,
                needs,
                exist,
                usable,
                free,
                together,
                ..
            } => {
                let are = if *free == 1 { "is" } else { "are" };
                write!(
                    f,
                    "request {request}: needs {} matching {}; {} on this node",
                    plural(*needs, "device", "devices"),
                    selected_by(class, *own_selectors),
                    plural(*exist, "exists", "exist"),
                )?;
                if usable < exist {
                    write!(f, " ({} of them unusable even when free)", exist - usable)?;
                }
                write!(f, ", {free} {are} free now")?;
                match together {
                    Some(n) if n < needs => {
                        write!(
                            f,
                            "; at most {n} can be allocated together (counters or capacity)"
                        )
                    }
                    _ => Ok(()),
                }
            }
            Self::Together {
                requests,
                needs,
                free,
                when,
            } => write!(
                f,
                "{}: each can be allocated alone, not together {}: they need {} and {} usable by them",
                requests_list(requests),
                when.words(),
                plural(*needs, "device", "devices"),
                plural(*free, "device is", "distinct devices are"),
            ),
            Self::Constraint {
                attribute,
                distinct,
                requests,
                needs,
                best,
                value,
                when,
            } => {
                let agree = if *distinct {
                    format!("has a distinct {attribute} each")
                } else {
                    format!("agrees on {attribute}")
                };
                write!(
                    f,
                    "no set of {} for {} {agree} {}; the best has {best}",
                    plural(*needs, "device", "devices"),
                    requests_list(requests),
                    when.words(),
                )?;
                match value {
                    Some(v) => write!(f, " ({attribute} {v})"),
                    None => Ok(()),
                }
            }
            Self::Constraints { attributes } => write!(
                f,
                "the constraints on {} each hold alone, not all together",
                attributes.join(", ")
            ),
            Self::Refused { message } => write!(f, "the scheduler refuses it: {message}"),
        }
    }
}

impl Shortfall {
    fn fmt_all(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self::Devices {
            request,
            class,
            own_selectors,
            exist,
            blocked,
            when,
            ..
        } = self
        else {
            return Ok(());
        };
        let which = selected_by(class, *own_selectors);
        if *exist == 0 {
            return write!(
                f,
                "request {request}: allocationMode All needs at least one device matching {which}; none exists on this node"
            );
        }
        if blocked.is_empty() {
            return write!(
                f,
                "request {request}: allocationMode All takes every device matching {which} ({exist} here), and they cannot all be taken together {} (their counters or capacity overlap)",
                when.words(),
            );
        }
        write!(
            f,
            "request {request}: allocationMode All takes every device matching {which} ({exist} here), and {} cannot be taken {}: {}",
            blocked.len(),
            when.words(),
            blocked_list(blocked),
        )
    }
}

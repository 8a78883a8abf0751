//! The input of [`super::entry`]: one device's usage summary as a plain
//! struct. The task fills it from gpusliced's `DeviceActivity` (pool, share
//! id) and its `DeviceUsageSummary`; nothing here knows the proto.

use k8s_openapi::jiff::Timestamp;
use serde::Serialize;

/// How a device is shared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Sharing {
    /// A whole GPU, alone.
    Exclusive,
    /// A MIG slice.
    Mig,
    /// An MPS share.
    Mps,
    /// A time-sliced share.
    Timeslicing,
}

impl Sharing {
    /// Shared with other claims' processes (OverShare applies).
    pub fn is_shared(self) -> bool {
        matches!(self, Self::Mps | Self::Timeslicing)
    }
}

/// Whether the device is idle, and since when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Idleness {
    /// Activity is not sampled (`[activity]` off, or the GPU not readable).
    SamplingOff,
    /// Active; `since` is when activity resumed (or the prepare).
    Active {
        /// When.
        since: Timestamp,
    },
    /// Idle for at least `idle_after_s`; `since` is when idleness began.
    Idle {
        /// When.
        since: Timestamp,
    },
}

/// An over-share episode on a shared device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverShare {
    /// Within its share since `since` (the prepare, or the last episode's end).
    Within {
        /// When.
        since: Timestamp,
    },
    /// Above its memory share since `since`.
    Over {
        /// When.
        since: Timestamp,
    },
}

/// The memory figures, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Memory {
    /// Used now.
    pub used: Option<u64>,
    /// Peak over the window.
    pub peak: Option<u64>,
    /// The claim's share of the GPU (MPS limit, time-slice share).
    pub share: Option<u64>,
    /// The device's total.
    pub total: Option<u64>,
}

/// The right-sizing advice's form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum AdviceForm {
    /// Seen too little to say.
    Abstain,
    /// Already the smallest fitting form.
    Keep,
    /// Idle all along: give the device back.
    GiveBack,
    /// A MIG slice.
    Mig,
    /// An MPS share.
    Mps,
    /// A time-sliced share.
    Timeslicing,
}

/// Right-sizing advice for the device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Advice {
    /// The form advised.
    pub form: AdviceForm,
    /// The MIG profile, for [`AdviceForm::Mig`].
    pub mig_profile: Option<String>,
    /// The DeviceClass a template would use.
    pub device_class: Option<String>,
    /// How long the claim was observed.
    pub observed_seconds: u64,
    /// The memory peak over that time.
    pub memory_peak_bytes: Option<u64>,
    /// The p95 of SM use, percent of the whole GPU.
    pub sm_p95_percent: Option<u32>,
    /// Why, one line.
    pub reason: String,
}

/// What a limit action was about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ActionKind {
    /// The claim's process above its memory share.
    Overshare,
    /// A process of no claim.
    Unclaimed,
}

/// The limit's mode when it acted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ActionMode {
    /// Said what it would end.
    DryRun,
    /// Ended it.
    End,
}

/// How a limit action ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ActionOutcome {
    /// Ended by SIGTERM.
    Terminated,
    /// Ended by SIGKILL after the grace.
    Killed,
    /// Dry run: would have ended it.
    WouldEnd,
    /// Gone before the signal.
    Gone,
    /// Its pid now names another process: no signal.
    PidReused,
    /// gpusliced may not signal it.
    NotPermitted,
    /// The signal failed for another reason (gpusliced's journal says why).
    Failed,
}

/// The last limit action on the device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastAction {
    /// What about.
    pub kind: ActionKind,
    /// In which mode.
    pub mode: ActionMode,
    /// The process.
    pub pid: u32,
    /// Its command name.
    pub name: String,
    /// Its memory when chosen.
    pub memory_used_bytes: u64,
    /// When.
    pub at: Timestamp,
    /// How it went.
    pub outcome: ActionOutcome,
}

/// One device of one prepared claim, as gpusliced summarises it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceUsage {
    /// The allocation result's pool.
    pub pool: String,
    /// The allocation result's device.
    pub device: String,
    /// The allocation result's share id (consumable capacity), if any.
    pub share_id: Option<String>,
    /// How it is shared.
    pub sharing: Sharing,
    /// When the claim was prepared.
    pub prepared_at: Timestamp,
    /// The sample these figures come from (None: none yet).
    pub sampled_at: Option<Timestamp>,
    /// The window the peaks and means cover.
    pub window_seconds: u32,
    /// Memory.
    pub memory: Memory,
    /// Mean SM use over the window, percent (None on MIG: not sampled).
    pub sm_mean_percent: Option<u32>,
    /// Peak SM use over the window, percent.
    pub sm_peak_percent: Option<u32>,
    /// Processes of the claim on the device.
    pub processes: Option<u32>,
    /// When it was last seen active.
    pub last_active: Option<Timestamp>,
    /// MPS active-thread percentage of the share.
    pub thread_percentage: Option<u32>,
    /// Idle or not.
    pub idleness: Idleness,
    /// Over its share or not (shared devices only; ignored otherwise).
    pub overshare: Option<OverShare>,
    /// Right-sizing advice.
    pub advice: Option<Advice>,
    /// The last limit action.
    pub last_action: Option<LastAction>,
}

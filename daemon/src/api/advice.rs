//! GetAdvice: the node's advice ([`crate::advice::view`]) as proto
//! messages. Pure conversions.

use gpuslice_proto::gpuslice::v1 as pb;

use crate::advice::node::{ClaimAdvice, DeviceAdvice, device_class};
use crate::advice::view::{AdviceSettings, NodeAdvice};
use crate::advice::whatif::WhatIf;
use crate::advice::{Advice, CurrentForm, Form};
use crate::state::AccessKind;

/// The reply to GetAdvice at `now` (Unix seconds); `advice` is `None` when
/// sampling is off.
pub fn advice_response(
    advice: Option<&NodeAdvice>,
    settings: AdviceSettings,
    now: i64,
) -> pb::GetAdviceResponse {
    pb::GetAdviceResponse {
        enabled: advice.is_some(),
        now,
        claims: advice
            .map(|a| a.claims.iter().map(claim).collect())
            .unwrap_or_default(),
        what_if: advice.map(|a| what_if(&a.what_if)),
        min_observed_s: settings.rule.min_observed_s,
        headroom_percent: settings.rule.headroom_percent,
    }
}

fn what_if(w: &WhatIf) -> pb::NodeWhatIf {
    pb::NodeWhatIf {
        gpus_freed: w.gpus_freed.clone(),
        moves: w.moves.clone(),
        mig_layouts: w.mig_layouts.clone(),
        summary: w.summary(),
    }
}

fn claim(c: &ClaimAdvice) -> pb::ClaimAdvice {
    pb::ClaimAdvice {
        claim: Some(pb::ClaimRef {
            uid: c.uid.clone(),
            namespace: c.namespace.clone(),
            name: c.name.clone(),
        }),
        devices: c.devices.iter().map(device).collect(),
    }
}

fn device(d: &DeviceAdvice) -> pb::DeviceAdvice {
    pb::DeviceAdvice {
        device: d.device.clone(),
        gpu: d.gpu.clone(),
        current: current(&d.current),
        advice: Some(advice(&d.advice)),
    }
}

/// "whole", "mig 3g.40gb", or a shared kind's word ([`AccessKind`]).
pub fn current(form: &CurrentForm) -> String {
    match form {
        CurrentForm::Whole => "whole".to_owned(),
        CurrentForm::Mig { profile } => format!("mig {profile}"),
        CurrentForm::Mps { .. } => AccessKind::Mps.to_string(),
        CurrentForm::TimeSlicing { .. } => AccessKind::TimeSlicing.to_string(),
    }
}

/// One device's advice.
pub fn advice(a: &Advice) -> pb::Advice {
    let mut out = pb::Advice {
        form: pb::AdviceForm::from(&a.form).into(),
        observed_seconds: a.observed_s,
        memory_peak_bytes: a.memory_peak,
        sm_p95_percent: a.sm_p95,
        smallest_mig_fit: a.smallest_mig_fit.clone().unwrap_or_default(),
        device_class: device_class(&a.form).unwrap_or_default().to_owned(),
        reason: a.reason.clone(),
        memory_bytes: a.form.memory_bytes().unwrap_or(0),
        ..pb::Advice::default()
    };
    match &a.form {
        Form::Mig { profile, .. } => out.mig_profile.clone_from(profile),
        Form::Mps {
            thread_percentage, ..
        } => out.thread_percentage = *thread_percentage,
        Form::TimeSlicing { sharers, .. } => out.timeslice_sharers = *sharers,
        Form::Abstain | Form::Keep | Form::GiveBack => {}
    }
    out
}

impl From<&Form> for pb::AdviceForm {
    fn from(form: &Form) -> Self {
        match form {
            Form::Abstain => Self::Abstain,
            Form::Keep => Self::Keep,
            Form::GiveBack => Self::GiveBack,
            Form::Mig { .. } => Self::Mig,
            Form::Mps { .. } => Self::Mps,
            Form::TimeSlicing { .. } => Self::Timeslicing,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    fn advised(form: Form) -> Advice {
        Advice {
            form,
            observed_s: 600,
            memory_peak: Some(4 * GIB),
            sm_p95: Some(5),
            smallest_mig_fit: Some("1g.10gb".into()),
            reason: "why".into(),
        }
    }

    #[test]
    fn each_form_maps_to_its_fields() {
        let mig = advice(&advised(Form::Mig {
            profile: "1g.10gb".into(),
            memory_bytes: 10 * GIB,
        }));
        assert_eq!(mig.form(), pb::AdviceForm::Mig);
        assert_eq!(
            (mig.mig_profile.as_str(), mig.memory_bytes),
            ("1g.10gb", 10 * GIB)
        );
        assert_eq!(mig.device_class, "mig.nvidia.com");
        assert_eq!(
            (mig.observed_seconds, mig.memory_peak_bytes),
            (600, Some(4 * GIB))
        );
        assert_eq!(mig.sm_p95_percent, Some(5));
        let mps = advice(&advised(Form::Mps {
            memory_bytes: 5 * GIB,
            thread_percentage: 10,
        }));
        assert_eq!(
            (mps.form(), mps.thread_percentage),
            (pb::AdviceForm::Mps, 10)
        );
        assert_eq!(mps.device_class, "gpu.nvidia.com");
        let ts = advice(&advised(Form::TimeSlicing {
            sharers: 4,
            memory_bytes: 20 * GIB,
        }));
        assert_eq!(
            (ts.form(), ts.timeslice_sharers),
            (pb::AdviceForm::Timeslicing, 4)
        );
        assert_eq!(ts.device_class, "shared-gpu.gpuslice.dev");
        for (form, want) in [
            (Form::Abstain, pb::AdviceForm::Abstain),
            (Form::Keep, pb::AdviceForm::Keep),
            (Form::GiveBack, pb::AdviceForm::GiveBack),
        ] {
            let out = advice(&advised(form));
            assert_eq!(out.form(), want);
            assert_eq!((out.memory_bytes, out.device_class.as_str()), (0, ""));
        }
    }

    #[test]
    fn sampling_off_answers_disabled_with_the_settings() {
        let reply = advice_response(None, AdviceSettings::default(), 7);
        assert!(!reply.enabled);
        assert!(reply.claims.is_empty());
        assert_eq!(
            (reply.now, reply.min_observed_s, reply.headroom_percent),
            (7, 86_400, 15)
        );
    }

    #[test]
    fn current_forms_read_as_words() {
        assert_eq!(current(&CurrentForm::Whole), "whole");
        assert_eq!(
            current(&CurrentForm::Mig {
                profile: "3g.40gb".into()
            }),
            "mig 3g.40gb"
        );
        assert_eq!(
            current(&CurrentForm::TimeSlicing { sharers: 2 }),
            AccessKind::TimeSlicing.to_string()
        );
    }
}

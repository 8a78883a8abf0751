use super::*;
use crate::config::LimitMode;

fn node(claim_override: ClaimOverride, overshare: LimitMode, grace_s: u64) -> LimitsConfig {
    LimitsConfig {
        overshare,
        grace_s,
        claim_override,
        ..LimitsConfig::default()
    }
}

fn claim(overshare: Option<LimitMode>, grace_s: Option<u64>) -> ClaimLimits {
    ClaimLimits { overshare, grace_s }
}

#[test]
fn off_refuses_any_limits_config_saying_what_to_do() {
    let err = admit(
        &node(ClaimOverride::Off, LimitMode::Warn, 60),
        2,
        claim(Some(LimitMode::End), None),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "configs[2]: this node does not let claims set limits ([limits] claim_override = \
         \"off\"); remove the LimitsConfig or ask the node's admin"
    );
}

#[test]
fn any_takes_every_setting() {
    let any = node(ClaimOverride::Any, LimitMode::End, 10);
    for mode in [LimitMode::Warn, LimitMode::DryRun, LimitMode::End] {
        for grace in [0, 10, 86_400] {
            let c = claim(Some(mode), Some(grace));
            assert_eq!(admit(&any, 0, c), Ok(c));
        }
    }
}

#[test]
fn stricter_takes_only_a_stricter_mode_and_a_shorter_grace() {
    let modes = [LimitMode::Warn, LimitMode::DryRun, LimitMode::End];
    for node_mode in modes {
        let n = node(ClaimOverride::Stricter, node_mode, 60);
        for mode in modes {
            let result = admit(&n, 1, claim(Some(mode), None));
            assert_eq!(result.is_ok(), mode >= node_mode, "{node_mode} {mode}");
        }
        for grace in [0, 59, 60, 61] {
            let result = admit(&n, 1, claim(None, Some(grace)));
            assert_eq!(result.is_ok(), grace <= 60, "{grace}");
        }
    }
}

#[test]
fn stricter_names_the_looser_field() {
    let n = node(ClaimOverride::Stricter, LimitMode::DryRun, 60);
    let looser_mode = admit(&n, 0, claim(Some(LimitMode::Warn), Some(30))).unwrap_err();
    assert_eq!(
        looser_mode.to_string(),
        "configs[0].overshare: \"warn\" is looser than this node's [limits] overshare = \
         \"dry-run\", and the node lets claims only tighten limits ([limits] claim_override = \
         \"stricter\"); use \"dry-run\" or stricter (warn < dry-run < end), or remove overshare"
    );
    let longer = admit(&n, 3, claim(Some(LimitMode::End), Some(90))).unwrap_err();
    assert_eq!(
        longer.to_string(),
        "configs[3].graceSeconds: 90 is longer than this node's [limits] grace_s = 60, and the \
         node lets claims only tighten limits ([limits] claim_override = \"stricter\"); use at \
         most 60, or remove graceSeconds"
    );
}

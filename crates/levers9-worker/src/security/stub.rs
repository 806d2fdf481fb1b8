//! What a stub asks for in its environment, and whether its pool grants it.
//!
//! A stub's value is a floor: its containers get, key by key, the stricter
//! of the pool's value and the stub's. A request that names a key looser
//! than the pool's (`LEVERS9_SECCOMP=observe` on a pool that enforces), or
//! a value that does not exist, fails the container's start with
//! [`StubRefused`] rather than run it under something other than what the
//! stub said: the caller reads the reason as the start failure of its
//! function.

use levers9_config::{SeccompSetting, SecurityProfileName};
use levers9_runtime::{ProfileField, SeccompMode, SecurityProfile};

use super::{
    profile_of, seccomp_mode, seccomp_name, SecurityPolicy, PROFILE_VARIABLE, SECCOMP_VARIABLE,
};

/// What a stub asked for that its pool does not grant, one sentence per
/// request, each saying what to ask for instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", reasons.join("; "))]
pub struct StubRefused {
    /// The worker's pool.
    pub pool: String,
    /// One sentence per refused request.
    pub reasons: Vec<String>,
}

impl SecurityPolicy {
    /// The profile for a container whose environment is `env`: the pool's,
    /// tightened by what the stub asked for.
    ///
    /// # Errors
    /// A request looser than the pool in a key it names, or a value that
    /// is not a profile or a seccomp mode.
    pub fn for_stub(&self, env: &[(String, String)]) -> Result<SecurityProfile, StubRefused> {
        let asked = |name: &str| {
            env.iter()
                .rev()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
        };
        let mut reasons = Vec::new();
        let mut profile = self.profile.clone();
        if let Some(value) = asked(PROFILE_VARIABLE) {
            match parse_profile(value) {
                Some(name) => {
                    let asked_for = profile_of(name);
                    let looser = loosened(&asked_for, &self.profile);
                    if looser.is_empty() {
                        profile = profile.tightened_by(&asked_for);
                    } else {
                        let keys: Vec<&str> = looser.iter().map(|f| f.key()).collect();
                        reasons.push(format!(
                            "{PROFILE_VARIABLE}={value} is looser than pool {}'s security in {}: a stub can only tighten its pool's security; remove {PROFILE_VARIABLE} or set it to hardened",
                            self.pool,
                            keys.join(", ")
                        ));
                    }
                }
                None => reasons.push(format!(
                    "{PROFILE_VARIABLE}={value:?} is not a security profile: the one a stub can ask for is hardened"
                )),
            }
        }
        if let Some(value) = asked(SECCOMP_VARIABLE) {
            match parse_seccomp(value) {
                Some(mode) if mode < self.profile.seccomp => reasons.push(format!(
                    "{SECCOMP_VARIABLE}={value} asks for less than pool {}'s seccomp ({}): a stub can only tighten its pool's security; remove {SECCOMP_VARIABLE} or set it to {}",
                    self.pool,
                    seccomp_name(self.profile.seccomp),
                    seccomp_name(self.profile.seccomp)
                )),
                Some(mode) => profile.seccomp = profile.seccomp.max(mode),
                None => reasons.push(format!(
                    "{SECCOMP_VARIABLE}={value:?} is not a seccomp mode: a stub can ask for observe or enforce"
                )),
            }
        }
        if reasons.is_empty() {
            Ok(profile)
        } else {
            Err(StubRefused {
                pool: self.pool.clone(),
                reasons,
            })
        }
    }
}

/// The keys where `asked` is looser than `pool` among those a profile name
/// decides. Paths are added to the pool's, never taken away, and neither
/// profile sets the user namespace (it has its own switch), so a profile
/// loosens neither: `hardened` asks for less than no pool.
fn loosened(asked: &SecurityProfile, pool: &SecurityProfile) -> Vec<ProfileField> {
    asked
        .looser_than(pool)
        .into_iter()
        .filter(|field| {
            !matches!(
                field,
                ProfileField::UserNamespace
                    | ProfileField::MaskedPaths
                    | ProfileField::ReadonlyPaths
            )
        })
        .collect()
}

fn parse_profile(value: &str) -> Option<SecurityProfileName> {
    match value.trim() {
        "default" => Some(SecurityProfileName::Default),
        "hardened" => Some(SecurityProfileName::Hardened),
        _ => None,
    }
}

fn parse_seccomp(value: &str) -> Option<SeccompMode> {
    match value.trim() {
        "off" => Some(seccomp_mode(SeccompSetting::Off)),
        "observe" => Some(seccomp_mode(SeccompSetting::Observe)),
        "enforce" => Some(seccomp_mode(SeccompSetting::Enforce)),
        _ => None,
    }
}

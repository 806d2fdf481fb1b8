//! What the hardening would refuse, or did: one structured log line per
//! case, naming the container, the stub, the pool and what happened, and a
//! Prometheus counter, so an operator can tell when it is safe to enforce
//! (the counter of a check stays flat in observe mode).

use levers9_ids::ContainerId;
use prometheus::{Encoder, IntCounterVec, Opts, Registry};

/// Which part of the hardening saw something.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// A call to the container server without the container's credential.
    ContainerServerAuth,
    /// A mount target that shadows a system path or escapes.
    VolumeMount,
    /// A stub asked for looser security than its pool's.
    StubLoosening,
    /// A syscall the hardened seccomp rules would refuse, from the kernel
    /// log.
    Seccomp,
}

impl Check {
    /// The metric label and log field.
    pub fn as_str(self) -> &'static str {
        match self {
            Check::ContainerServerAuth => "container_server_auth",
            Check::VolumeMount => "volume_mount",
            Check::StubLoosening => "stub_loosening",
            Check::Seccomp => "seccomp",
        }
    }
}

/// Whom a violation is about.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Subject {
    /// The id of the container it happened in; logged, not a metric label.
    /// `None` when it is not known (a process that ended before it could be
    /// placed in a container).
    pub container_id: Option<ContainerId>,
    /// Its stub, empty for a plain container.
    pub stub_id: String,
    /// The worker's pool.
    pub pool: String,
}

/// The worker's metrics registry: the violation counter. Cheap to clone.
#[derive(Clone)]
pub struct SecurityMetrics {
    registry: Registry,
    violations: IntCounterVec,
}

impl std::fmt::Debug for SecurityMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecurityMetrics").finish_non_exhaustive()
    }
}

impl Default for SecurityMetrics {
    fn default() -> Self {
        let violations = IntCounterVec::new(
            Opts::new(
                "levers9_container_security_violations_total",
                "What container hardening refused (enforce) or would have refused (observe, log)",
            ),
            &["check", "mode", "pool"],
        )
        // The options are constants that name a valid metric.
        .expect("a valid metric");
        let registry = Registry::new();
        registry
            .register(Box::new(violations.clone()))
            // A fresh registry has no metric of the same name.
            .expect("registered once");
        SecurityMetrics {
            registry,
            violations,
        }
    }
}

impl SecurityMetrics {
    /// Logs one violation and counts it. `mode` is the check's mode
    /// (`observe`, `log` or `enforce`): whether it was refused.
    pub fn record(&self, check: Check, mode: &str, subject: &Subject, what: &str) {
        tracing::warn!(
            check = check.as_str(),
            mode,
            container_id = %subject.container_id.as_ref().map_or("", ContainerId::as_str),
            stub_id = %subject.stub_id,
            pool = %subject.pool,
            what,
            "container security violation"
        );
        self.violations
            .with_label_values(&[check.as_str(), mode, &subject.pool])
            .inc();
    }

    /// How many violations of `check` in `mode` were counted in `pool`.
    pub fn count(&self, check: Check, mode: &str, pool: &str) -> u64 {
        self.violations
            .with_label_values(&[check.as_str(), mode, pool])
            .get()
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = Vec::new();
        // Encoding into a Vec cannot run out of space; a metric that cannot
        // be encoded is skipped rather than failing the scrape.
        let _ = prometheus::TextEncoder::new().encode(&self.registry.gather(), &mut out);
        String::from_utf8_lossy(&out).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn violations_are_counted_by_check_mode_and_pool() {
        let metrics = SecurityMetrics::default();
        let subject = Subject {
            container_id: Some(ContainerId::parse("c1").unwrap()),
            stub_id: "s1".into(),
            pool: "gpu".into(),
        };
        metrics.record(Check::VolumeMount, "log", &subject, "/etc shadows /etc");
        metrics.record(Check::VolumeMount, "log", &subject, "/usr shadows /usr");
        assert_eq!(metrics.count(Check::VolumeMount, "log", "gpu"), 2);
        assert_eq!(metrics.count(Check::VolumeMount, "enforce", "gpu"), 0);
        let text = metrics.render();
        assert!(
            text.contains(
                "levers9_container_security_violations_total{check=\"volume_mount\",mode=\"log\",pool=\"gpu\"} 2"
            ),
            "{text}"
        );
    }
}

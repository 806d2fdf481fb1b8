//! Running juicefs: `format` (idempotent) and `mount` (always
//! `--no-usage-report`), with the metadata password and the bucket keys in
//! the child's environment only, a deadline on each command, and output
//! scrubbed of every secret before it reaches an error.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use levers9_config::JuiceFsConfig;
use tokio::process::Command;
use zeroize::Zeroizing;

use crate::meta_url::MetaUrl;
use crate::VolumeError;

/// Creating a file system tests the bucket with retries (about 12 s on
/// refused keys); mounting takes about a second.
const COMMAND_DEADLINE: Duration = Duration::from_secs(90);
/// How long a health check may take: a mount whose daemon hangs must not
/// hang the container start with it.
const STAT_DEADLINE: Duration = Duration::from_secs(10);
/// The inode number of the root of every JuiceFS file system: a mount
/// point with another one is a plain directory, nothing is mounted there.
const ROOT_INODE: u64 = 1;

/// Whether `format` may change an existing file system's settings (the
/// controlplane, which owns the keys) or only creates a missing one (the
/// workers, so a worker with stale keys cannot overwrite good ones).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormatMode {
    /// Create, or bring the settings (keys, bucket) up to date.
    Update,
    /// Create if missing; leave an existing one as it is.
    CreateOnly,
}

/// One JuiceFS file system and where this process mounts it.
#[derive(Clone)]
pub struct JuiceFs {
    binary: String,
    meta: MetaUrl,
    storage: String,
    bucket: String,
    access_key: Zeroizing<String>,
    secret_key: Zeroizing<String>,
    /// Whether the keys are handed to every command rather than stored in
    /// the file system's settings by `format` (see [`JuiceFs::handing_keys`]).
    keys_handed: bool,
    name: String,
    cache_size_mib: u64,
    mount_point: PathBuf,
    cache_dir: PathBuf,
    log: PathBuf,
}

impl std::fmt::Debug for JuiceFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JuiceFs")
            .field("meta", &self.meta)
            .field("bucket", &self.bucket)
            .field("keys_handed", &self.keys_handed)
            .field("mount_point", &self.mount_point)
            .finish_non_exhaustive()
    }
}

/// What the mount point holds now.
#[derive(Debug, PartialEq, Eq)]
pub enum MountState {
    /// The file system is there and answers.
    Mounted,
    /// A plain directory (or nothing): not mounted.
    NotMounted,
    /// Mounted, but its daemon is gone (it crashed or was killed).
    Dead,
}

impl JuiceFs {
    /// The file system of `config`, mounted under `work_dir` (its `mnt/`,
    /// with the cache in `cache/` and the daemon's log in `juicefs.log`).
    pub fn new(config: &JuiceFsConfig, work_dir: &Path) -> JuiceFs {
        JuiceFs {
            binary: config.binary.clone(),
            meta: MetaUrl::parse(config.meta_url.expose()),
            storage: config.storage.clone(),
            bucket: config.bucket.clone(),
            access_key: Zeroizing::new(config.access_key.expose().to_owned()),
            secret_key: Zeroizing::new(config.secret_key.expose().to_owned()),
            keys_handed: false,
            name: config.name.clone(),
            cache_size_mib: config.cache_size_mib,
            mount_point: work_dir.join("mnt"),
            cache_dir: work_dir.join("cache"),
            log: work_dir.join("juicefs.log"),
        }
    }

    /// The same settings for another file system: metadata `meta`, data
    /// in S3 `bucket` (a URL) with these keys, mounted under `work_dir`.
    /// The keys are handed to `format` and `mount` in the AWS variables of
    /// their environment and never stored in the file system's settings, so
    /// the metadata engine never holds them; `mount` tests the bucket first.
    pub(crate) fn handing_keys(
        &self,
        meta: MetaUrl,
        bucket: String,
        access_key: Zeroizing<String>,
        secret_key: Zeroizing<String>,
        work_dir: &Path,
    ) -> JuiceFs {
        JuiceFs {
            binary: self.binary.clone(),
            meta,
            storage: "s3".into(),
            bucket,
            access_key,
            secret_key,
            keys_handed: true,
            name: self.name.clone(),
            cache_size_mib: self.cache_size_mib,
            mount_point: work_dir.join("mnt"),
            cache_dir: work_dir.join("cache"),
            log: work_dir.join("juicefs.log"),
        }
    }

    /// Drops (and zeroes) the keys: enough to check and unmount it.
    pub(crate) fn forget_keys(&mut self) {
        self.access_key = Zeroizing::default();
        self.secret_key = Zeroizing::default();
    }

    /// Where it is mounted.
    pub fn mount_point(&self) -> &Path {
        &self.mount_point
    }

    /// The metadata URL as it may be shown (without its password).
    pub fn shown_meta_url(&self) -> &str {
        &self.meta.shown
    }

    /// Formats the file system: creates it if missing, and under
    /// [`FormatMode::Update`] brings an existing one's keys up to date.
    pub async fn format(&self, mode: FormatMode) -> Result<(), VolumeError> {
        let mut command = self.command();
        command.args([
            "format",
            "--storage",
            &self.storage,
            "--bucket",
            &self.bucket,
        ]);
        command.arg("--trash-days").arg("0");
        if mode == FormatMode::CreateOnly {
            command.arg("--no-update");
        }
        self.give_keys(&mut command);
        command.arg(&self.meta.shown).arg(&self.name);
        self.run("format", command).await
    }

    /// Mounts it in the background (`-d`): the daemon outlives this call
    /// and is unmounted by [`JuiceFs::unmount`].
    pub async fn mount(&self) -> Result<(), VolumeError> {
        for dir in [&self.mount_point, &self.cache_dir] {
            tokio::fs::create_dir_all(dir)
                .await
                .map_err(|source| VolumeError::Io {
                    what: format!("create {}", dir.display()),
                    source,
                })?;
        }
        let mut command = self.command();
        command.args(["mount", "-d", "--no-usage-report"]);
        command.arg("--cache-dir").arg(&self.cache_dir);
        command
            .arg("--cache-size")
            .arg(self.cache_size_mib.to_string());
        command.arg("--log").arg(&self.log);
        if self.keys_handed {
            // The bucket comes from here, not the settings, so new keys
            // for a moved bucket work at once; a refused key fails the
            // mount rather than every write after it.
            command.args(["--storage", &self.storage, "--bucket", &self.bucket]);
            command.arg("--check-storage");
            self.give_keys(&mut command);
        }
        command.arg(&self.meta.shown).arg(&self.mount_point);
        self.run("mount", command).await
    }

    /// The bucket keys in the child's environment: juicefs's own variables
    /// (which `format` stores in the settings, where mounts read them), or
    /// AWS's (which its S3 client reads and nothing stores).
    fn give_keys(&self, command: &mut Command) {
        let (access, secret) = if self.keys_handed {
            ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
        } else {
            ("ACCESS_KEY", "SECRET_KEY")
        };
        if !self.access_key.is_empty() {
            command.env(access, self.access_key.as_str());
        }
        if !self.secret_key.is_empty() {
            command.env(secret, self.secret_key.as_str());
        }
    }

    /// What the mount point holds: a stat of it tells a live mount (the
    /// root inode), a dead one (`ENOTCONN`) and none apart.
    pub async fn state(&self) -> MountState {
        let path = self.mount_point.clone();
        let stat = tokio::time::timeout(
            STAT_DEADLINE,
            tokio::task::spawn_blocking(move || std::fs::metadata(path)),
        )
        .await;
        match stat {
            Ok(Ok(Ok(meta))) if meta.ino() == ROOT_INODE => MountState::Mounted,
            Ok(Ok(Ok(_))) => MountState::NotMounted,
            Ok(Ok(Err(e))) if e.kind() == std::io::ErrorKind::NotFound => MountState::NotMounted,
            // ENOTCONN (the daemon is gone), a hang, or any other failure
            // to stat the root: nothing there can be trusted with a
            // container.
            _ => MountState::Dead,
        }
    }

    /// Unmounts it; a mount whose daemon is gone (or busy) is detached
    /// lazily, so the mount point can be mounted again.
    pub async fn unmount(&self) {
        let mut command = self.command();
        command.arg("umount").arg(&self.mount_point);
        if let Err(error) = self.run("umount", command).await {
            tracing::info!(%error, "juicefs umount failed; detaching the mount lazily");
            let detached = Command::new("umount")
                .arg("-l")
                .arg(&self.mount_point)
                .stdin(Stdio::null())
                .output()
                .await;
            if let Err(error) = detached {
                tracing::warn!(%error, mount_point = %self.mount_point.display(), "cannot detach the JuiceFS mount");
            }
        }
    }

    /// A juicefs command with a clean environment: the metadata password
    /// and nothing of this process's own (its tokens included).
    fn command(&self) -> Command {
        let mut command = Command::new(&self.binary);
        command.env_clear();
        if let Some(path) = std::env::var_os("PATH") {
            command.env("PATH", path);
        }
        if let Some(password) = &self.meta.password {
            command.env("META_PASSWORD", password);
        }
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        command
    }

    async fn run(&self, what: &'static str, mut command: Command) -> Result<(), VolumeError> {
        let child = command.spawn().map_err(|source| VolumeError::Spawn {
            binary: self.binary.clone(),
            source,
        })?;
        let output = tokio::time::timeout(COMMAND_DEADLINE, child.wait_with_output())
            .await
            .map_err(|_| VolumeError::JuiceFs {
                what,
                cause: format!("it did not finish within {} s", COMMAND_DEADLINE.as_secs()),
            })?
            .map_err(|source| VolumeError::Io {
                what: format!("run juicefs {what}"),
                source,
            })?;
        if output.status.success() {
            return Ok(());
        }
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        Err(VolumeError::JuiceFs {
            what,
            cause: self.scrub(&cause_of(&text)),
        })
    }

    /// `text` without any secret this file system knows.
    fn scrub(&self, text: &str) -> String {
        let mut text = text.to_owned();
        let secrets = [
            self.meta.password.as_deref().unwrap_or(""),
            self.secret_key.as_str(),
            self.access_key.as_str(),
        ];
        for secret in secrets.into_iter().filter(|s| !s.is_empty()) {
            text = text.replace(secret, "<redacted>");
        }
        text
    }
}

/// The line that says why juicefs failed: its fatal or error line without
/// the timestamp and source location, else the last line.
fn cause_of(output: &str) -> String {
    let lines: Vec<&str> = output.lines().filter(|l| !l.trim().is_empty()).collect();
    let line = lines
        .iter()
        .rev()
        .find(|l| l.contains("<FATAL>") || l.contains("<ERROR>"))
        .or(lines.last())
        .copied()
        .unwrap_or("no output");
    let message = line.split_once(">: ").map_or(line, |(_, message)| message);
    // "... [format@format.go:574]": where in juicefs, not why.
    let message = match message.rfind(" [") {
        Some(at) if message.ends_with(']') => &message[..at],
        _ => message,
    };
    message.trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cause_is_the_fatal_line_without_its_decoration() {
        let output = "2026/12/03 04:28:55 juicefs[1] <INFO>: Meta address: redis://h/4 [NewClient@interface.go:645]\n\
             2026/12/03 04:29:07 juicefs[1] <FATAL>: Storage s3://h/b/ is not configured correctly: api error SignatureDoesNotMatch [format@format.go:574]\n";
        assert_eq!(
            cause_of(output),
            "Storage s3://h/b/ is not configured correctly: api error SignatureDoesNotMatch"
        );
        assert_eq!(cause_of("plain failure\n"), "plain failure");
    }

    #[test]
    fn secrets_are_scrubbed_from_what_juicefs_said() {
        let config = JuiceFsConfig {
            meta_url: levers9_config::Secret::new("redis://:pw123@h:1/2"),
            access_key: levers9_config::Secret::new("AKID"),
            secret_key: levers9_config::Secret::new("SK999"),
            ..JuiceFsConfig::default()
        };
        let fs = JuiceFs::new(&config, Path::new("/w"));
        assert_eq!(fs.shown_meta_url(), "redis://h:1/2");
        assert_eq!(
            fs.scrub("key AKID secret SK999 password pw123"),
            "key <redacted> secret <redacted> password <redacted>"
        );
    }
}

//! The agent download on the HTTP port: `GET /agent/levers9-<os>-<arch>`
//! answers with a `levers9` binary for that platform. The link asks for no
//! token (a box that has not joined yet has none), so it only hands out
//! binaries: prebuilt ones from `controlplane.agentBinariesDir`, or this
//! controlplane's own executable for its own platform. Building one from
//! source (`?dev=true`, or a platform with no prebuilt binary) needs
//! `controlplane.agentDevBuilds` (`LEVERS9_AGENT_DEV_BUILDS=true`), which
//! only a development controlplane should set.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde::Deserialize;
use tokio::sync::Mutex;

/// Where agent binaries are downloaded on the HTTP port:
/// `/agent/levers9-<os>-<arch>`.
pub const ROUTE: &str = "/agent";

/// Where agent binaries come from.
#[derive(Debug, Clone)]
pub struct AgentBinaries {
    /// `controlplane.agentBinariesDir`; None serves only our own executable.
    pub dir: Option<PathBuf>,
    /// `controlplane.agentDevBuilds`.
    pub dev_builds: bool,
    /// The workspace `cargo build` runs in.
    pub source_dir: PathBuf,
}

impl AgentBinaries {
    /// From the config; dev builds use the source this binary was built from.
    pub fn from_config(config: &levers9_config::ControlplaneConfig) -> Self {
        Self {
            dir: (!config.agent_binaries_dir.is_empty())
                .then(|| PathBuf::from(&config.agent_binaries_dir)),
            dev_builds: config.agent_dev_builds,
            source_dir: Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."),
        }
    }
}

/// The platform of this process, as download names write it.
pub fn own_platform() -> String {
    format!(
        "{}-{}",
        std::env::consts::OS,
        arch_name(std::env::consts::ARCH)
    )
}

/// `uname -m` and Rust name machines differently from download names.
fn arch_name(arch: &str) -> &str {
    match arch {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

/// The Rust target triple of a download platform, for cross dev builds.
fn target_triple(platform: &str) -> Option<&'static str> {
    match platform {
        "linux-amd64" => Some("x86_64-unknown-linux-gnu"),
        "linux-arm64" => Some("aarch64-unknown-linux-gnu"),
        "darwin-amd64" => Some("x86_64-apple-darwin"),
        "darwin-arm64" => Some("aarch64-apple-darwin"),
        _ => None,
    }
}

/// `levers9-<os>-<arch>` → `<os>-<arch>`, when well formed.
fn platform_of(file: &str) -> Option<&str> {
    let platform = file.strip_prefix("levers9-")?;
    let (os, arch) = platform.split_once('-')?;
    let part_ok = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    };
    (part_ok(os) && part_ok(arch)).then_some(platform)
}

/// The message of a refused dev build.
pub fn dev_builds_off(platform: &str) -> String {
    format!(
        "agent dev builds are off on this controlplane: set LEVERS9_AGENT_DEV_BUILDS=true on it \
         (development only: the download link asks for no token), or put a prebuilt \
         levers9-{platform} in controlplane.agentBinariesDir"
    )
}

#[derive(Deserialize)]
struct DownloadQuery {
    #[serde(default)]
    dev: bool,
}

struct Downloads {
    binaries: AgentBinaries,
    /// One cargo build at a time: they share the target directory.
    building: Mutex<()>,
}

/// The router of `GET /agent/{file}`, serving `levers9-<os>-<arch>` from the
/// configured binaries (or a dev build with `?dev=true`).
pub fn router(binaries: AgentBinaries) -> Router {
    let state = Arc::new(Downloads {
        binaries,
        building: Mutex::new(()),
    });
    Router::new()
        .route(&format!("{ROUTE}/{{file}}"), get(download))
        .with_state(state)
}

async fn download(
    State(downloads): State<Arc<Downloads>>,
    UrlPath(file): UrlPath<String>,
    Query(query): Query<DownloadQuery>,
) -> Response {
    let Some(platform) = platform_of(&file) else {
        return refuse(
            StatusCode::NOT_FOUND,
            format!(
                "no agent download {file:?}: ask for levers9-<os>-<arch>, e.g. levers9-linux-amd64"
            ),
        );
    };
    let binaries = &downloads.binaries;
    if query.dev {
        if !binaries.dev_builds {
            return refuse(StatusCode::FORBIDDEN, dev_builds_off(platform));
        }
        return build_and_serve(&downloads, platform).await;
    }
    if let Some(dir) = &binaries.dir {
        let prebuilt = dir.join(&file);
        if prebuilt.is_file() {
            return serve(&prebuilt).await;
        }
    }
    if platform == own_platform() {
        return match std::env::current_exe() {
            Ok(own) => serve(&own).await,
            Err(error) => {
                tracing::error!(%error, "cannot find this controlplane's own executable");
                refuse(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "cannot read this controlplane's own executable: see its log".into(),
                )
            }
        };
    }
    if binaries.dev_builds {
        return build_and_serve(&downloads, platform).await;
    }
    refuse(
        StatusCode::NOT_FOUND,
        format!(
            "no prebuilt agent for {platform} on this controlplane; {}",
            dev_builds_off(platform)
        ),
    )
}

async fn build_and_serve(downloads: &Downloads, platform: &str) -> Response {
    let source = &downloads.binaries.source_dir;
    let mut command = tokio::process::Command::new("cargo");
    command
        .current_dir(source)
        .args(["build", "-p", "levers9-cli", "--bin", "levers9"]);
    let built = if platform == own_platform() {
        source.join("target/debug/levers9")
    } else {
        let Some(triple) = target_triple(platform) else {
            return refuse(
                StatusCode::NOT_FOUND,
                format!("agent dev builds know no Rust target for {platform}"),
            );
        };
        command.args(["--target", triple]);
        source.join("target").join(triple).join("debug/levers9")
    };
    let _one_at_a_time = downloads.building.lock().await;
    tracing::info!(platform, source = %source.display(), "building the agent (agent dev builds are on)");
    match command.output().await {
        Ok(out) if out.status.success() => serve(&built).await,
        Ok(out) => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let tail: Vec<&str> = stderr.lines().rev().take(20).collect();
            tracing::error!(platform, status = %out.status, stderr = %tail.into_iter().rev().collect::<Vec<_>>().join("\n"), "agent dev build failed");
            refuse(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("the agent dev build for {platform} failed: see the controlplane log"),
            )
        }
        Err(error) => {
            tracing::error!(%error, "cannot run cargo for an agent dev build");
            refuse(
                StatusCode::INTERNAL_SERVER_ERROR,
                "cannot run cargo for the agent dev build: see the controlplane log".into(),
            )
        }
    }
}

async fn serve(path: &Path) -> Response {
    let file = match tokio::fs::File::open(path).await {
        Ok(file) => file,
        Err(error) => {
            tracing::error!(%error, path = %path.display(), "cannot open an agent binary");
            return refuse(
                StatusCode::INTERNAL_SERVER_ERROR,
                "cannot read the agent binary: see the controlplane log".into(),
            );
        }
    };
    let length = file.metadata().await.map(|m| m.len()).unwrap_or(0);
    let body = Body::from_stream(tokio_util::io::ReaderStream::new(file));
    (
        [
            (header::CONTENT_TYPE, "application/octet-stream".to_owned()),
            (header::CONTENT_LENGTH, length.to_string()),
        ],
        body,
    )
        .into_response()
}

fn refuse(code: StatusCode, message: String) -> Response {
    (code, format!("{message}\n")).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn download_names_are_levers9_os_arch() {
        assert_eq!(platform_of("levers9-linux-amd64"), Some("linux-amd64"));
        assert_eq!(platform_of("levers9-linux-arm64"), Some("linux-arm64"));
        for bad in [
            "levers9",
            "levers9-linux",
            "x-linux-amd64",
            "levers9-../etc-x",
            "levers9-Linux-amd64",
        ] {
            assert_eq!(platform_of(bad), None, "{bad}");
        }
        assert!(own_platform().starts_with(std::env::consts::OS));
        assert_eq!(
            target_triple("linux-arm64"),
            Some("aarch64-unknown-linux-gnu")
        );
    }
}

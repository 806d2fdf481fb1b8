//! The join command `levers9 machine create` writes: a POSIX shell script
//! that puts the join token in a private file, downloads the agent from the
//! controlplane's HTTP port and starts it. The token is in the script (so
//! the file is the secret) but never on a command line: the agent reads it
//! from the file.

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _, Result};

/// What goes into a join command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinCommand {
    /// The machine.
    pub machine_id: String,
    /// Its pool.
    pub pool: String,
    /// When the join token stops working (RFC 3339).
    pub expires_at: String,
    /// The controlplane's gRPC address as the box reaches it.
    pub controlplane: String,
    /// Whether the box speaks TLS to it.
    pub tls: bool,
    /// The base URL of the agent download (`…/agent`).
    pub download_url: String,
    /// Ask the controlplane to build the agent from source.
    pub dev: bool,
}

/// Where the join token shows in the printed form.
const HIDDEN: &str = "<join token hidden: it is in the file>";

/// Marks the line that carries the token in the script.
const TOKEN_MARK: &str = "LEVERS9_JOIN_TOKEN";

impl JoinCommand {
    /// The script, with `token` in it.
    pub fn script(&self, token: &str) -> String {
        let JoinCommand {
            machine_id,
            pool,
            expires_at,
            controlplane,
            tls,
            download_url,
            dev,
        } = self;
        let dev = if *dev { "true" } else { "''" };
        let controlplane = sh_quote(controlplane);
        let download_url = sh_quote(download_url);
        format!(
            r#"#!/bin/sh
# Joins this box to levers9 as machine {machine_id} of pool {pool}.
# Run it as root on the box: sh {machine_id}.sh
# The join token below works once, until {expires_at}. Keep this file private.
set -eu
umask 077
LEVERS9_CONTROLPLANE={controlplane}
LEVERS9_CONTROLPLANE_TLS={tls}
export LEVERS9_CONTROLPLANE LEVERS9_CONTROLPLANE_TLS
download={download_url}
dev={dev}
dir="${{LEVERS9_AGENT_DIR:-/var/lib/levers9/agent}}"
mkdir -p "$dir"
chmod 700 "$dir"
# The agent reads the token from this file, so it shows in no process list.
cat > "$dir/join-token" <<'{TOKEN_MARK}'
{token}
{TOKEN_MARK}
command -v curl >/dev/null || {{ echo "levers9: the join command needs curl" >&2; exit 1; }}
os=$(uname -s | tr '[:upper:]' '[:lower:]')
case "$(uname -m)" in
  x86_64|amd64) arch=amd64 ;;
  aarch64|arm64) arch=arm64 ;;
  *) arch=$(uname -m) ;;
esac
url="$download/levers9-$os-$arch"
if [ -n "$dev" ]; then url="$url?dev=true"; fi
echo "levers9: downloading the agent from $url" >&2
# A private CA for the controlplane's certificate: LEVERS9_CONTROLPLANE_CA,
# which the agent reads too.
if ! curl -sS --fail-with-body ${{LEVERS9_CONTROLPLANE_CA:+--cacert "$LEVERS9_CONTROLPLANE_CA"}} \
    -o "$dir/levers9.download" "$url"; then
  cat "$dir/levers9.download" >&2 2>/dev/null || true
  rm -f "$dir/levers9.download"
  exit 1
fi
chmod 755 "$dir/levers9.download"
mv -f "$dir/levers9.download" "$dir/levers9"
exec "$dir/levers9" agent --join-token-file "$dir/join-token" --state-dir "$dir/worker" "$@"
"#
        )
    }

    /// The script as it may be shown: the token replaced.
    pub fn shown(&self) -> String {
        self.script(HIDDEN)
    }
}

/// One shell word, whatever `text` holds.
fn sh_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// `~/.levers9/machines`.
pub fn machines_dir() -> Result<PathBuf> {
    Ok(crate::context::levers9_dir()?.join("machines"))
}

/// Writes `ID.sh` readable by its owner only, in a directory only its owner
/// can enter; refuses to overwrite one.
pub fn write(dir: &Path, machine_id: &str, script: &str) -> Result<PathBuf> {
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
        .with_context(|| format!("cannot make {} private", dir.display()))?;
    if machine_id.is_empty() || machine_id.contains(['/', '.']) {
        bail!("the controlplane sent a machine id that is not a file name: {machine_id:?}");
    }
    let path = dir.join(format!("{machine_id}.sh"));
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    file.write_all(script.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    file.sync_all()?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command() -> JoinCommand {
        JoinCommand {
            machine_id: "m1".into(),
            pool: "gpu".into(),
            expires_at: "2026-12-03T08:00:00Z".into(),
            controlplane: "cp.example.com:1993".into(),
            tls: false,
            download_url: "http://cp.example.com:1994/agent".into(),
            dev: false,
        }
    }

    #[test]
    fn the_script_holds_the_token_and_the_shown_form_does_not() {
        let command = command();
        let script = command.script("l9j_secret");
        assert!(script.contains("\nl9j_secret\n"), "{script}");
        assert!(script.contains("LEVERS9_CONTROLPLANE='cp.example.com:1993'"));
        assert_eq!(sh_quote("it's"), r"'it'\''s'");
        assert!(script.contains("agent --join-token-file"));
        // The token is never an argument.
        for line in script.lines().filter(|l| l.contains("levers9\" agent")) {
            assert!(!line.contains("l9j_"), "{line}");
        }
        let shown = command.shown();
        assert!(!shown.contains("l9j_secret"));
        assert!(shown.contains(HIDDEN));
    }

    #[test]
    fn the_file_is_private_and_never_overwritten() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join("machines");
        let path = write(&dir, "m1", "#!/bin/sh\n").unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&dir), 0o700);
        assert!(write(&dir, "m1", "again").is_err());
        assert!(write(&dir, "../x", "x").is_err());
    }
}

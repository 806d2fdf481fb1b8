//! A private registry for credential tests: Debian's `docker-registry` with
//! htpasswd auth on a free loopback port, its user's docker config JSON, and
//! a watch over every process's command line for its password.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;

use super::{free_port, text};

/// The realm the registry names in its `Basic` challenge.
pub const REALM: &str = "levers9-test";

/// `docker-registry serve` asking every call for basic credentials; stopped
/// by PID on drop.
pub struct PrivateRegistry {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub address: String,
    pub username: String,
    /// Fresh for each registry, so a search for it finds only its leaks.
    pub password: String,
    dir: tempfile::TempDir,
}

impl PrivateRegistry {
    /// Starts one with a fresh password and waits until it answers.
    pub fn start() -> PrivateRegistry {
        let dir = tempfile::tempdir().expect("registry dir");
        let username = "levers9-e2e".to_owned();
        let password = format!("pw-{}", random_hex(16));
        // The password goes to htpasswd on stdin (-i), never on a command
        // line, so the tests can look for it in every process's arguments.
        let mut htpasswd = Command::new("htpasswd")
            .args(["-iBn", &username])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("htpasswd runs (apache2-utils, scripts/install-test-packages.sh)");
        htpasswd
            .stdin
            .take()
            .expect("stdin")
            .write_all(password.as_bytes())
            .expect("write the password to htpasswd");
        let hashed = htpasswd.wait_with_output().expect("htpasswd finishes");
        assert!(
            hashed.status.success(),
            "htpasswd: {}",
            text(&hashed.stderr)
        );
        let htpasswd_file = dir.path().join("htpasswd");
        std::fs::write(&htpasswd_file, &hashed.stdout).expect("write htpasswd");
        let address = format!("127.0.0.1:{}", free_port());
        let config = dir.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog: {{level: warn}}\nstorage:\n  filesystem: {{rootdirectory: {data}}}\n  \
                 delete: {{enabled: true}}\nauth:\n  htpasswd: {{realm: {REALM}, path: {htpasswd}}}\n\
                 http: {{addr: {address}}}\n",
                data = dir.path().join("data").display(),
                htpasswd = htpasswd_file.display(),
            ),
        )
        .expect("write registry config");
        let log = std::fs::File::create(dir.path().join("registry.log")).expect("registry log");
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("docker-registry runs");
        // Built before the wait, so a registry that never answers is
        // stopped (on drop) too.
        let mut registry = PrivateRegistry {
            child,
            address,
            username,
            password,
            dir,
        };
        registry.wait_answering();
        registry
    }

    /// Waits until `/v2/` answers at all (with its `401`).
    fn wait_answering(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("docker-registry exited with {status}:\n{}", self.log());
            }
            if http_status(&self.address, "/v2/", None).is_some() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the private registry does not answer at {}:\n{}",
                self.address,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("registry.log")).unwrap_or_default()
    }

    /// `base64(user:password)`, as an `auth` entry and a `Basic` header hold.
    pub fn basic_auth(&self) -> String {
        base64::engine::general_purpose::STANDARD
            .encode(format!("{}:{}", self.username, self.password))
    }

    /// A docker config JSON file (mode 0600) holding this registry's
    /// credentials, as `~/.docker/config.json` or a dockerconfigjson
    /// Secret's `.dockerconfigjson` would.
    pub fn docker_config(&self, dir: &Path) -> PathBuf {
        self.docker_config_with(dir, &self.basic_auth())
    }

    /// Like [`PrivateRegistry::docker_config`], with another password
    /// (one the registry refuses).
    pub fn docker_config_with_password(&self, dir: &Path, password: &str) -> PathBuf {
        let auth = base64::engine::general_purpose::STANDARD
            .encode(format!("{}:{password}", self.username));
        self.docker_config_with(dir, &auth)
    }

    fn docker_config_with(&self, dir: &Path, auth: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt as _;
        let path = dir.join("config.json");
        let json = serde_json::json!({
            "auths": { self.address.as_str(): { "auth": auth } }
        });
        std::fs::write(&path, json.to_string()).expect("write docker config");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod 600");
        path
    }

    /// Copies `source` (a reference in the plain-HTTP test registry) to
    /// `repository:tag` here with skopeo, digests preserved, the credentials
    /// given in a docker config file; returns `address/repository@digest`.
    pub fn copy_in(&self, source: &str, repository: &str, tag: &str) -> String {
        let auth = tempfile::tempdir().expect("auth dir");
        let authfile = self.docker_config(auth.path());
        let destination = format!("{}/{repository}:{tag}", self.address);
        let copied = Command::new("skopeo")
            .args(["copy", "-q", "--preserve-digests"])
            .args(["--src-tls-verify=false", "--dest-tls-verify=false"])
            .arg("--dest-authfile")
            .arg(&authfile)
            .arg(format!("docker://{source}"))
            .arg(format!("docker://{destination}"))
            .output()
            .expect("skopeo runs");
        assert!(
            copied.status.success(),
            "skopeo copy {source} {destination}: {}\n{}",
            text(&copied.stderr),
            self.log()
        );
        let inspected = Command::new("skopeo")
            .args(["inspect", "--tls-verify=false", "--format", "{{.Digest}}"])
            .arg("--authfile")
            .arg(&authfile)
            .arg(format!("docker://{destination}"))
            .output()
            .expect("skopeo runs");
        assert!(
            inspected.status.success(),
            "skopeo inspect {destination}: {}",
            text(&inspected.stderr)
        );
        let digest = text(&inspected.stdout).trim().to_owned();
        assert!(digest.starts_with("sha256:"), "{digest:?}");
        format!("{}/{repository}@{digest}", self.address)
    }
}

impl Drop for PrivateRegistry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The status of `GET http://address/path` (with this `Authorization`), or
/// `None` when nothing answers.
pub fn http_status(address: &str, path: &str, authorization: Option<&str>) -> Option<u16> {
    http_get(address, path, authorization).map(|(status, _)| status)
}

const MANIFEST_TYPES: &str = "application/vnd.oci.image.manifest.v1+json, \
     application/vnd.oci.image.index.v1+json, \
     application/vnd.docker.distribution.manifest.v2+json";

/// `GET http://address/path` over HTTP/1.0: the status and the headers.
pub fn http_get(address: &str, path: &str, authorization: Option<&str>) -> Option<(u16, String)> {
    use std::io::Read as _;
    let mut stream = std::net::TcpStream::connect(address).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    // Manifests are served only to clients that say they take their type.
    let mut request =
        format!("GET {path} HTTP/1.0\r\nHost: {address}\r\nAccept: {MANIFEST_TYPES}\r\n");
    if let Some(value) = authorization {
        request.push_str(&format!("Authorization: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).ok()?;
    let answer = text(&answer);
    let head = answer
        .split("\r\n\r\n")
        .next()
        .unwrap_or_default()
        .to_owned();
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, head))
}

fn random_hex(bytes: usize) -> String {
    use std::io::Read as _;
    let mut buffer = vec![0; bytes];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buffer))
        .expect("read /dev/urandom");
    hex::encode(buffer)
}

/// Looks at every process's `/proc/<pid>/cmdline`, over and over on a
/// thread of its own (every 20 ms), for any of the `needles`, until
/// finished or dropped: the long-lived processes for sure, short-lived ones
/// (runc, a container's command) when they live through a scan.
pub struct CmdlineWatch {
    stop: Arc<AtomicBool>,
    found: Arc<Mutex<Vec<String>>>,
    scans: Arc<std::sync::atomic::AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl CmdlineWatch {
    pub fn start(needles: Vec<String>) -> CmdlineWatch {
        let stop = Arc::new(AtomicBool::new(false));
        let found = Arc::new(Mutex::new(Vec::new()));
        let scans = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let thread = {
            let (stop, found, scans) = (stop.clone(), found.clone(), scans.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    for hit in scan_cmdlines(&needles) {
                        let mut found = found.lock().unwrap_or_else(|e| e.into_inner());
                        if !found.contains(&hit) {
                            found.push(hit);
                        }
                    }
                    scans.fetch_add(1, Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(20));
                }
            })
        };
        CmdlineWatch {
            stop,
            found,
            scans,
            thread: Some(thread),
        }
    }

    /// The command lines that held a needle so far (needles masked).
    pub fn found(&self) -> Vec<String> {
        self.found.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Stops watching; the command lines that held a needle (with the
    /// needle masked) and how many scans of /proc were made.
    pub fn finish(mut self) -> (Vec<String>, u64) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let found = std::mem::take(&mut *self.found.lock().unwrap_or_else(|e| e.into_inner()));
        (found, self.scans.load(Ordering::Relaxed))
    }
}

impl Drop for CmdlineWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// `pid: command line` of each process whose arguments hold a needle, the
/// needle masked.
fn scan_cmdlines(needles: &[String]) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut hits = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        // Gone since the listing: nothing to see.
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if let Some(needle) = needles.iter().find(|n| cmdline.contains(n.as_str())) {
            hits.push(format!(
                "{pid}: {}",
                cmdline.replace(needle.as_str(), "<SECRET>")
            ));
        }
    }
    hits
}

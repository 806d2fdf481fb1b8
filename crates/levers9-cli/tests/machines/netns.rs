//! A second host on this machine: a network namespace joined to the host by
//! a veth pair. The host talks to it only through its own end of the pair
//! (never to a namespace address from the host namespace). Forwarders make
//! the host's loopback servers reachable at the same 127.0.0.1 ports from
//! inside. Everything is undone on drop, failures included, by PID and by
//! name: the processes it started, then the namespace (which takes the veth
//! pair with it). Processes enter it with nsenter (network only).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The namespace, its forwarders and what runs in it.
pub struct SecondHost {
    pub name: String,
    host_address: String,
    processes: Vec<Child>,
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl SecondHost {
    /// Makes the namespace and forwards `ports` from its loopback to the
    /// host's loopback.
    pub fn new(ports: &[u16]) -> SecondHost {
        let id = std::process::id() % 100_000;
        let name = format!("l9m{id}");
        // A namespace left by a killed run of the same pid.
        let _ = Command::new("ip").args(["netns", "del", &name]).output();
        // A /30 of its own per test process: 16000 of them in 10.77/16.
        let n = id % 16_000;
        let (octet, base) = (n / 64, (n % 64) * 4);
        let host_address = format!("10.77.{octet}.{}", base + 1);
        let box_address = format!("10.77.{octet}.{}", base + 2);
        let (host_end, box_end) = (format!("{name}h"), format!("{name}b"));
        let mut host = SecondHost {
            name: name.clone(),
            host_address: host_address.clone(),
            processes: Vec::new(),
        };
        ip(&["netns", "add", &name]);
        ip(&[
            "link", "add", &host_end, "type", "veth", "peer", "name", &box_end,
        ]);
        ip(&["link", "set", &box_end, "netns", &name]);
        ip(&[
            "addr",
            "add",
            &format!("{host_address}/30"),
            "dev",
            &host_end,
        ]);
        ip(&["link", "set", &host_end, "up"]);
        ip(&[
            "-n",
            &name,
            "addr",
            "add",
            &format!("{box_address}/30"),
            "dev",
            &box_end,
        ]);
        ip(&["-n", &name, "link", "set", "lo", "up"]);
        ip(&["-n", &name, "link", "set", &box_end, "up"]);
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/machines/forward.py");
        let ports: Vec<String> = ports.iter().map(u16::to_string).collect();
        let outside = Command::new("python3")
            .arg(&script)
            .args([host_address.as_str(), "127.0.0.1"])
            .args(&ports)
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the host forwarder");
        host.processes.push(outside);
        let inside = Command::new("nsenter")
            .arg(host.net_arg())
            .args(["--", "python3"])
            .arg(&script)
            .args(["127.0.0.1", host_address.as_str()])
            .args(&ports)
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the namespace forwarder");
        host.processes.push(inside);
        for child in &mut host.processes {
            wait_for_line(child, "forwarding");
        }
        host
    }

    /// Starts `program args` inside the namespace, with only PATH, HOME and
    /// `env`, output to `log`; stopped on drop.
    pub fn spawn(
        &mut self,
        program: &str,
        args: &[&str],
        env: &[(&str, &str)],
        home: &Path,
        log: &Path,
    ) {
        let log = std::fs::File::create(log).expect("log file");
        let child = Command::new("nsenter")
            .arg(self.net_arg())
            .args(["--", program])
            .args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", home)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("spawn in the namespace");
        self.processes.push(child);
    }

    /// Enters only the network namespace: `ip netns exec` would also make a
    /// mount namespace with a fresh /sys, without the cgroup mounts runc
    /// needs (and pinning FUSE mounts, see MACHINE-NOTES).
    fn net_arg(&self) -> String {
        format!("--net=/run/netns/{}", self.name)
    }

    /// The process started last.
    pub fn last_pid(&self) -> u32 {
        self.processes.last().map_or(0, Child::id)
    }

    /// The host's address on the pair (for messages).
    pub fn host_address(&self) -> &str {
        &self.host_address
    }
}

fn wait_for_line(child: &mut Child, needle: &str) {
    use std::io::BufRead;
    let stdout = child.stdout.take().expect("piped stdout");
    let mut line = String::new();
    std::io::BufReader::new(stdout)
        .read_line(&mut line)
        .expect("read the forwarder");
    assert!(line.contains(needle), "forwarder said {line:?}");
}

impl Drop for SecondHost {
    fn drop(&mut self) {
        // What runs inside first (the agent drains and stops its containers
        // on SIGTERM), the forwarders last.
        for child in self.processes.iter_mut().rev() {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            let deadline = Instant::now() + Duration::from_secs(20);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}

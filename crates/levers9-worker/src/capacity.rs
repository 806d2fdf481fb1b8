//! What a worker offers: CPU and memory of the machine (or less, by flags),
//! and GPUs given by flags or config.

/// A worker's capacity.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Capacity {
    /// CPU millicores.
    pub cpu_millicores: u64,
    /// Memory in MiB.
    pub memory_mib: u64,
    /// GPUs: type and device ids.
    pub gpus: Vec<(String, Vec<String>)>,
}

/// The machine's CPUs (as millicores) and memory (from /proc/meminfo).
pub fn detect_capacity() -> Capacity {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
    let memory_kib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|line| line.strip_prefix("MemTotal:"))
                .and_then(|rest| {
                    rest.trim()
                        .trim_end_matches("kB")
                        .trim()
                        .parse::<u64>()
                        .ok()
                })
        })
        .unwrap_or(0);
    Capacity {
        cpu_millicores: cpus * 1000,
        memory_mib: memory_kib / 1024,
        gpus: Vec::new(),
    }
}

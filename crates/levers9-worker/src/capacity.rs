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

impl Capacity {
    /// As the API sends it (a worker's Register, an agent's join).
    pub fn to_wire(&self) -> levers9_api::v1::Capacity {
        levers9_api::v1::Capacity {
            cpu_millicores: self.cpu_millicores,
            memory_mib: self.memory_mib,
            gpus: self
                .gpus
                .iter()
                .map(|(gpu_type, device_ids)| levers9_api::v1::Gpu {
                    gpu_type: gpu_type.clone(),
                    device_ids: device_ids.clone(),
                    count: u32::try_from(device_ids.len()).unwrap_or(u32::MAX),
                })
                .collect(),
        }
    }
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

/// How long `nvidia-smi` may take before the worker starts without GPUs.
const NVIDIA_SMI_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The machine's NVIDIA GPUs, read through NVML's command line
/// (`nvidia-smi`); none when it is not installed or fails.
pub async fn detect_gpus() -> Vec<(String, Vec<String>)> {
    let query = tokio::process::Command::new("nvidia-smi")
        .args(["--query-gpu=index,name", "--format=csv,noheader"])
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(NVIDIA_SMI_TIMEOUT, query).await {
        Ok(Ok(out)) if out.status.success() => {
            parse_nvidia_smi(&String::from_utf8_lossy(&out.stdout))
        }
        Ok(Ok(out)) => {
            tracing::warn!(status = %out.status, "nvidia-smi failed; offering no GPUs");
            Vec::new()
        }
        // Not installed: a machine without NVIDIA GPUs.
        Ok(Err(_)) => Vec::new(),
        Err(_) => {
            tracing::warn!("nvidia-smi did not answer within 10 s; offering no GPUs");
            Vec::new()
        }
    }
}

/// `0, NVIDIA H100 80GB HBM3` lines → `[("H100", ["0", …])]`: the model is the
/// first word after the vendor, before any `-` (`A100-SXM4-80GB` → `A100`),
/// the names users ask for in `gpu=`.
fn parse_nvidia_smi(output: &str) -> Vec<(String, Vec<String>)> {
    let mut gpus: Vec<(String, Vec<String>)> = Vec::new();
    for line in output.lines() {
        let Some((index, name)) = line.split_once(',') else {
            continue;
        };
        let name = name.trim();
        let model = name
            .strip_prefix("NVIDIA ")
            .unwrap_or(name)
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .split('-')
            .next()
            .unwrap_or_default()
            .to_owned();
        if model.is_empty() {
            continue;
        }
        match gpus.iter_mut().find(|(m, _)| *m == model) {
            Some((_, ids)) => ids.push(index.trim().to_owned()),
            None => gpus.push((model, vec![index.trim().to_owned()])),
        }
    }
    gpus
}

#[cfg(test)]
mod tests {
    use super::parse_nvidia_smi;

    #[test]
    fn nvidia_smi_lines_become_gpu_types_with_device_ids() {
        let out = "0, NVIDIA H100 80GB HBM3\n1, NVIDIA H100 80GB HBM3\n2, NVIDIA A100-SXM4-80GB\n3, NVIDIA L40S\n";
        assert_eq!(
            parse_nvidia_smi(out),
            vec![
                ("H100".to_owned(), vec!["0".to_owned(), "1".to_owned()]),
                ("A100".to_owned(), vec!["2".to_owned()]),
                ("L40S".to_owned(), vec!["3".to_owned()]),
            ]
        );
        assert!(parse_nvidia_smi("").is_empty());
    }
}

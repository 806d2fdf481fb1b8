//! The GPUs a worker hands out: the devices the controlplane's
//! reservations turn into, taken by a container and given back at its end.

use std::collections::HashMap;

use super::Supervisor;

/// GPU device ids not given to a container, by type.
pub(super) type FreeGpus = HashMap<String, Vec<String>>;

impl Supervisor {
    /// Takes `count` devices of `gpu_type` for a container. The controlplane
    /// reserved the count, so this fails only when the worker has fewer
    /// devices than it reported (e.g. a GPU the machine does not hand out).
    pub(super) fn take_gpus(&self, gpu_type: &str, count: u32) -> Result<Vec<String>, String> {
        if count == 0 {
            return Ok(Vec::new());
        }
        let mut free = self.free_gpus.lock();
        let devices = free.entry(gpu_type.to_owned()).or_default();
        let count = count as usize;
        if devices.len() < count {
            return Err(format!(
                "not enough GPUs available: asked for {count} {gpu_type}, {} free on this worker",
                devices.len()
            ));
        }
        Ok(devices.drain(..count).collect())
    }

    pub(super) fn give_back_gpus(&self, gpu_type: &str, devices: Vec<String>) {
        if !devices.is_empty() {
            let mut free = self.free_gpus.lock();
            let list = free.entry(gpu_type.to_owned()).or_default();
            list.extend(devices);
            list.sort();
        }
    }
}

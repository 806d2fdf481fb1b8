//! The scheduler at fleet scale: 10,000 container requests over 100, 1,000
//! and 10,000 simulated workers (records and capacity counters on the real
//! Redis, as registered workers leave them; their run requests go to their
//! inbox queues), placed by one replica's scheduler loop: pop a batch from
//! the backlog, read its records, decide it, reserve, record, send. Prints
//! the total time, the p50/p99 of the decision alone (per request, in
//! memory) and of a whole batch (up to 256 requests).
//! Needs `LEVERS9_TEST_REDIS_URL` (`make bench-scheduling`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use levers9_controlplane::fleet::records::{ContainerRecord, WorkerRecord};
use levers9_controlplane::fleet::{Fleet, CPU, MEMORY};
use levers9_controlplane::functions::TaskState;
use levers9_controlplane::scheduler::placement::{self, Ask, Offer};
use levers9_controlplane::scheduler::view;
use levers9_controlplane::scheduler::{Scheduler, Scheduling, BACKLOG};
use levers9_state::{HotState, RedisState, Write};
use tokio::sync::watch;

const REQUESTS: usize = 10_000;
/// A run that has not placed everything by then is reported as it stands.
const GIVE_UP: Duration = Duration::from_secs(120);

pub async fn run() -> Result<()> {
    let url = std::env::var("LEVERS9_TEST_REDIS_URL")
        .context("LEVERS9_TEST_REDIS_URL is not set: run with scripts/test-servers.sh")?;
    let requests: usize = std::env::var("LEVERS9_BENCH_REQUESTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(REQUESTS);
    println!("| workers | requests | placed | total | decision p50 | decision p99 | batches | batch p50 | batch p99 |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for workers in [100, 1_000, 10_000] {
        let prefix = format!("bench-sched-{}-{workers}:", std::process::id());
        let state: Arc<dyn HotState> = Arc::new(RedisState::connect(&url, &prefix).await?);
        let fleet = Fleet::new(
            state.clone(),
            Duration::from_secs(3600),
            BTreeMap::new(),
            Arc::new(TaskState::new(
                state.clone(),
                Duration::from_secs(60),
                "bench",
            )),
        );
        bench(&fleet, state, workers, requests).await?;
    }
    Ok(())
}

async fn bench(
    fleet: &Fleet,
    state: Arc<dyn HotState>,
    workers: usize,
    requests: usize,
) -> Result<()> {
    // Room for every request, GPUs (enough for the GPU requests) on one
    // worker in ten, sizes spread so the best fit looks at the whole fleet.
    let per_worker = (requests / workers).max(1) as u64 + 1;
    let gpus_per_worker = (requests / 20).div_ceil(workers / 10).max(4);
    for n in 0..workers {
        let gpus = if n.is_multiple_of(10) {
            let devices = (0..gpus_per_worker).map(|d| d.to_string()).collect();
            vec![("L40S".to_owned(), devices)]
        } else {
            Vec::new()
        };
        let worker = WorkerRecord {
            id: format!("w{n:05}"),
            pool: "default".into(),
            hostname: "bench".into(),
            runtime: "runc".into(),
            cpu_millicores: per_worker * 1000 + (n as u64 % 7) * 100,
            memory_mib: per_worker * 512 + 1024,
            gpus: gpus.clone(),
            last_heartbeat_at: chrono::Utc::now(),
            token_id: String::new(),
        };
        let mut free = vec![
            (CPU.to_owned(), worker.cpu_millicores as i64),
            (MEMORY.to_owned(), worker.memory_mib as i64),
        ];
        for (t, devices) in &gpus {
            free.push((
                levers9_controlplane::fleet::gpu_counter(t),
                devices.len() as i64,
            ));
        }
        fleet.put_worker(&worker).await?;
        fleet.set_free_capacity(&worker.id, &free).await?;
        fleet.touch_alive(&worker.id).await?;
    }
    let mut offers = Vec::with_capacity(workers);
    for id in fleet.worker_ids().await? {
        let (Some(w), Some(free)) = (fleet.worker(&id).await?, fleet.free_capacity(&id).await?)
        else {
            continue;
        };
        offers.push(view::offer(&w, &free));
    }
    let containers: Vec<ContainerRecord> = (0..requests).map(request).collect();
    fleet.put_containers(&containers).await?;
    let backlog: Vec<Write> = containers
        .iter()
        .map(|c| Write::Push {
            queue: BACKLOG.to_owned(),
            value: c.id.clone().into_bytes(),
        })
        .collect();
    state.write_batch(&backlog).await?;

    let decisions = decision_times(fleet, &offers, &containers);
    let (_tx, picture) = watch::channel(Arc::new(offers));
    let scheduling = Scheduling::new(fleet.clone(), state);
    let mut replica = Scheduler::new(scheduling, picture, "bench");
    let mut batches = Vec::new();
    let mut placed = 0;
    let started = Instant::now();
    // Requests that found no room come back to the backlog after a pause;
    // there is room for all of them, so this ends once each is placed.
    while placed < requests && started.elapsed() < GIVE_UP {
        let t = Instant::now();
        let ids = replica.pop_batch().await?;
        if ids.is_empty() {
            continue;
        }
        placed += replica.place_batch(ids).await.placed;
        batches.push(t.elapsed());
    }
    let total = started.elapsed();
    println!(
        "| {workers} | {requests} | {placed} | {:.2} s | {} | {} | {} | {} | {} |",
        total.as_secs_f64(),
        micros(&decisions, 50),
        micros(&decisions, 99),
        batches.len(),
        micros(&batches, 50),
        micros(&batches, 99),
    );
    Ok(())
}

/// The decision alone, on the starting picture, for every request.
fn decision_times(
    fleet: &Fleet,
    offers: &[Offer],
    containers: &[ContainerRecord],
) -> Vec<Duration> {
    containers
        .iter()
        .map(|c| {
            let ask = Ask {
                pool: c.pool.clone(),
                cpu: c.cpu_millicores as i64,
                memory: c.memory_mib as i64,
                gpu_types: c.gpu_types.clone(),
                gpus: i64::from(c.gpu_count),
            };
            let t = Instant::now();
            std::hint::black_box(placement::decide(&ask, offers, fleet.pools()));
            t.elapsed()
        })
        .collect()
}

/// One request in twenty asks for an L40S; half name no pool.
fn request(n: usize) -> ContainerRecord {
    let gpu = n.is_multiple_of(20);
    ContainerRecord {
        id: format!("c{n:06}"),
        pool: if n.is_multiple_of(2) {
            String::new()
        } else {
            "default".into()
        },
        cpu_millicores: 500 + (n as u64 % 3) * 250,
        memory_mib: 256,
        gpu_types: if gpu { vec!["L40S".into()] } else { Vec::new() },
        gpu_count: u32::from(gpu),
        ..ContainerRecord::pending(format!("ws{}", n % 4), "bench")
    }
}

fn micros(samples: &[Duration], percentile: usize) -> String {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let at = (sorted.len() * percentile / 100).min(sorted.len().saturating_sub(1));
    format!("{} µs", sorted.get(at).map_or(0, |d| d.as_micros()))
}

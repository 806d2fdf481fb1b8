use super::*;

fn worker(id: &str, pool: &str, cpu: i64, memory: i64, gpus: &[(&str, i64)]) -> Offer {
    let gpus: Vec<(String, i64)> = gpus.iter().map(|(t, n)| ((*t).to_owned(), *n)).collect();
    Offer {
        worker_id: id.into(),
        pool: pool.into(),
        total_cpu: cpu,
        total_memory: memory,
        total_gpus: gpus.clone(),
        free_cpu: cpu,
        free_memory: memory,
        free_gpus: gpus,
    }
}

fn ask(cpu: i64, memory: i64, types: &[&str], gpus: i64) -> Ask {
    Ask {
        pool: String::new(),
        cpu,
        memory,
        gpu_types: types.iter().map(|t| (*t).to_owned()).collect(),
        gpus,
    }
}

fn first(decision: &Decision, offers: &[Offer]) -> (String, Option<String>) {
    let Decision::Place(choice) = decision else {
        panic!("not placed: {decision:?}");
    };
    (
        offers[choice.offer].worker_id.clone(),
        choice.gpu_type.clone(),
    )
}

fn pool(gpu_type: &str, priority: i32, requires_selector: bool) -> PoolConfig {
    PoolConfig {
        gpu_type: gpu_type.into(),
        priority,
        requires_pool_selector: requires_selector,
        ..PoolConfig::default()
    }
}

#[test]
fn best_fit_prefers_the_tightest_worker_that_fits() {
    let offers = [
        worker("big", "default", 8000, 32_000, &[]),
        worker("small", "default", 1000, 2048, &[]),
        worker("medium", "default", 2000, 4096, &[]),
    ];
    let pools = Pools::default();
    let wanted = ask(1500, 1024, &[], 0);
    assert_eq!(
        first(&decide(&wanted, &offers, &pools), &offers).0,
        "medium"
    );
    // As the scheduler decides a batch: each placement is taken from the
    // picture before the next request is decided.
    let mut picture = offers.clone();
    picture[2].take(&wanted, None);
    assert_eq!(first(&decide(&wanted, &picture, &pools), &picture).0, "big");
    picture[0].free_cpu = 1000;
    assert_eq!(decide(&wanted, &picture, &pools), Decision::Wait);
    assert!(matches!(
        decide(&ask(9000, 1, &[], 0), &offers, &pools),
        Decision::Fail(reason) if reason.contains("big enough")
    ));
}

#[test]
fn gpu_requests_pack_onto_the_worker_they_fill_and_follow_the_type_order() {
    let offers = [
        worker("eight", "gpu", 8000, 32_000, &[("H100", 8)]),
        worker("four", "gpu", 8000, 32_000, &[("H100", 4)]),
        worker("two", "gpu", 8000, 32_000, &[("L40S", 2)]),
    ];
    let pools = Pools::default();
    let got = first(
        &decide(&ask(1000, 1024, &["H100"], 4), &offers, &pools),
        &offers,
    );
    assert_eq!(
        got,
        ("four".into(), Some("H100".into())),
        "no hidden cap: 4 on the 4-GPU worker"
    );
    let got = first(
        &decide(&ask(1000, 1024, &["L40S", "H100"], 2), &offers, &pools),
        &offers,
    );
    assert_eq!(
        got,
        ("two".into(), Some("L40S".into())),
        "the first type offered wins"
    );
    let mut full = offers.clone();
    full[2].free_gpus[0].1 = 0;
    let got = first(
        &decide(&ask(1000, 1024, &["L40S", "H100"], 2), &full, &pools),
        &full,
    );
    assert_eq!(
        got,
        ("four".into(), Some("H100".into())),
        "falls through to the next type"
    );
    assert!(matches!(
        decide(&ask(1000, 1024, &["H100"], 9), &offers, &pools),
        Decision::Fail(reason) if reason.contains("not enough GPUs available") && reason.contains("has 9 GPUs")
    ));
}

#[test]
fn a_gpu_type_nobody_offers_fails_with_the_pools_that_exist() {
    let offers = [worker("a", "l40s", 8000, 32_000, &[("L40S", 2)])];
    let pools = Pools::new(
        BTreeMap::from([("l40s".into(), pool("L40S", 0, false))]),
        true,
    );
    let Decision::Fail(reason) = decide(&ask(100, 64, &["H200"], 1), &offers, &pools) else {
        panic!("placed an H200 request")
    };
    assert_eq!(reason, "no pool offers GPU H200 (offered: l40s: L40S)");
    // Without a live worker, the configured GPU types still answer.
    let Decision::Fail(reason) = decide(&ask(100, 64, &["H200"], 1), &[], &pools) else {
        panic!("waited for an H200 no pool offers")
    };
    assert!(reason.starts_with("no pool offers GPU H200"), "{reason}");
    assert_eq!(
        decide(&ask(100, 64, &["L40S"], 1), &[], &pools),
        Decision::Wait
    );
}

#[test]
fn a_gpu_pool_whose_workers_see_no_gpu_says_which_setting_fixes_it() {
    let offers = [worker("blind", "l40s", 8000, 32_000, &[])];
    let configured = BTreeMap::from([("l40s".into(), pool("L40S", 0, false))]);
    let Decision::Fail(reason) = decide(
        &ask(100, 64, &["L40S"], 1),
        &offers,
        &Pools::new(configured.clone(), false),
    ) else {
        panic!("placed a GPU request on a worker without GPUs")
    };
    assert!(reason.starts_with("not enough GPUs available"), "{reason}");
    assert!(
        reason.contains("worker.jobResourcesEnforced: true"),
        "{reason}"
    );
    let Decision::Fail(reason) = decide(
        &ask(100, 64, &["L40S"], 1),
        &offers,
        &Pools::new(configured, true),
    ) else {
        panic!("placed")
    };
    assert!(reason.contains("device plugin"), "{reason}");
}

#[test]
fn pools_by_priority_selector_and_gpu_thrift() {
    let offers = [
        worker("build-1", "build", 8000, 32_000, &[]),
        worker("cheap-1", "cheap", 2000, 4096, &[]),
        worker("fast-1", "fast", 8000, 32_000, &[]),
        worker("gpu-1", "l40s", 1000, 2048, &[("L40S", 1)]),
    ];
    let pools = Pools::new(
        BTreeMap::from([
            ("build".into(), pool("", 100, true)),
            ("fast".into(), pool("", 10, false)),
            ("l40s".into(), pool("L40S", 0, false)),
        ]),
        true,
    );
    let got = first(&decide(&ask(500, 512, &[], 0), &offers, &pools), &offers);
    assert_eq!(
        got.0, "fast-1",
        "the highest priority that admits it; never build"
    );
    let mut named = ask(500, 512, &[], 0);
    named.pool = "build".into();
    assert_eq!(
        first(&decide(&named, &offers, &pools), &offers).0,
        "build-1"
    );
    let mut busy = offers.clone();
    busy[2].free_cpu = 0;
    let got = first(&decide(&ask(500, 512, &[], 0), &busy, &pools), &busy);
    assert_eq!(got.0, "cheap-1", "a CPU request keeps off the GPU worker");
    let got = first(
        &decide(&ask(500, 512, &["L40S"], 1), &offers, &pools),
        &offers,
    );
    assert_eq!(got, ("gpu-1".into(), Some("L40S".into())));
}

//! The behaviour every backend must show for schedules of deployed functions.

use futures::future::join_all;
use levers9_store::{
    Fired, FunctionStore, NewDeployment, NewSchedule, NewTask, RecordStore, ScheduleFire,
};

use super::at;
use super::functions::{stub, workspace};

fn schedule(function: &str, spec: &str, next_tick: i64) -> NewSchedule {
    NewSchedule {
        id: format!("sch-{function}"),
        function_name: function.to_owned(),
        spec: spec.to_owned(),
        next_tick,
    }
}

fn deployment(ws: &str, functions: &[(&str, &str)], schedules: Vec<NewSchedule>) -> NewDeployment {
    NewDeployment {
        workspace_id: ws.to_owned(),
        app_name: "cron-app".to_owned(),
        functions: functions
            .iter()
            .map(|(f, s)| ((*f).to_owned(), (*s).to_owned()))
            .collect(),
        schedules,
        endpoints: Vec::new(),
        deployed_by: "token-1".to_owned(),
        at: at(20),
    }
}

fn fire(schedule_id: &str, stub_id: &str, ws: &str, expected: i64, tick: i64) -> ScheduleFire {
    ScheduleFire {
        schedule_id: schedule_id.to_owned(),
        expected_next_tick: expected,
        tick,
        next_tick: tick + 60,
        task: NewTask {
            id: format!("t-{schedule_id}-{tick}"),
            workspace_id: ws.to_owned(),
            stub_id: stub_id.to_owned(),
            function_name: "resize".to_owned(),
            created_at: at(30),
        },
    }
}

/// (function, spec, next tick, last tick) of each schedule of the workspace.
async fn current<S: FunctionStore>(store: &S, ws: &str) -> Vec<(String, String, i64, Option<i64>)> {
    store
        .list_schedules(ws)
        .await
        .unwrap()
        .into_iter()
        .map(|s| (s.function_name, s.spec, s.next_tick, s.last_tick))
        .collect()
}

pub async fn a_redeploy_replaces_the_apps_schedules_and_keeps_unchanged_ticks<
    S: RecordStore + FunctionStore,
>(
    store: &S,
) {
    let ws = workspace(store, "team").await;
    for id in ["stub-1", "stub-2", "stub-3"] {
        store.get_or_create_stub(stub(&ws, id)).await.unwrap();
    }
    store
        .deploy(deployment(
            &ws,
            &[("a", "stub-1"), ("b", "stub-2"), ("c", "stub-3")],
            vec![
                schedule("a", "period:60", 1_000),
                schedule("b", "cron:*/5 * * * *", 1_200),
                schedule("c", "period:10", 1_010),
            ],
        ))
        .await
        .unwrap();
    let fired = store
        .fire_schedule(&fire("sch-a", "stub-1", &ws, 1_000, 1_000))
        .await
        .unwrap();
    assert_eq!(fired, Fired::Submitted);

    // a: same spec, new stub; b: new spec; c: no schedule any more; d: new.
    store.get_or_create_stub(stub(&ws, "stub-4")).await.unwrap();
    store
        .deploy(deployment(
            &ws,
            &[
                ("a", "stub-4"),
                ("b", "stub-2"),
                ("c", "stub-3"),
                ("d", "stub-1"),
            ],
            vec![
                schedule("a", "period:60", 9_999),
                schedule("b", "cron:0 * * * *", 3_600),
                schedule("d", "period:5", 1_005),
            ],
        ))
        .await
        .unwrap();

    assert_eq!(
        current(store, &ws).await,
        vec![
            ("a".into(), "period:60".into(), 1_060, Some(1_000)),
            ("b".into(), "cron:0 * * * *".into(), 3_600, None),
            ("d".into(), "period:5".into(), 1_005, None),
        ]
    );
    let listed = store.list_schedules(&ws).await.unwrap();
    assert_eq!(listed[0].stub_id, "stub-4");
    assert_eq!(listed[0].version, 2);
    assert_eq!(listed[0].last_task_id.as_deref(), Some("t-sch-a-1000"));

    // A deploy without schedules removes them all.
    store
        .deploy(deployment(&ws, &[("a", "stub-4")], Vec::new()))
        .await
        .unwrap();
    assert!(store.list_schedules(&ws).await.unwrap().is_empty());
}

pub async fn a_schedule_for_a_function_outside_the_deploy_is_refused_and_nothing_is_stored<
    S: RecordStore + FunctionStore,
>(
    store: &S,
) {
    let ws = workspace(store, "team").await;
    store.get_or_create_stub(stub(&ws, "stub-1")).await.unwrap();

    let err = store
        .deploy(deployment(
            &ws,
            &[("a", "stub-1")],
            vec![schedule("elsewhere", "period:60", 1_000)],
        ))
        .await
        .unwrap_err();

    assert!(err.to_string().contains("\"elsewhere\""), "{err}");
    assert!(store.list_deployments(&ws).await.unwrap().is_empty());
    assert!(store.list_schedules(&ws).await.unwrap().is_empty());
}

pub async fn due_schedules_are_those_whose_tick_has_come_soonest_first<
    S: RecordStore + FunctionStore,
>(
    store: &S,
) {
    let ws = workspace(store, "team").await;
    for id in ["stub-1", "stub-2"] {
        store.get_or_create_stub(stub(&ws, id)).await.unwrap();
    }
    store
        .deploy(deployment(
            &ws,
            &[("a", "stub-1"), ("b", "stub-2"), ("c", "stub-1")],
            vec![
                schedule("a", "period:60", 2_000),
                schedule("b", "period:60", 1_000),
                schedule("c", "period:60", 5_000),
            ],
        ))
        .await
        .unwrap();

    let due = |now| async move {
        store
            .due_schedules(now, 10)
            .await
            .unwrap()
            .into_iter()
            .map(|s| s.function_name)
            .collect::<Vec<_>>()
    };
    assert_eq!(due(999).await, Vec::<String>::new());
    assert_eq!(due(2_000).await, vec!["b", "a"]);
    assert_eq!(store.due_schedules(10_000, 1).await.unwrap().len(), 1);
}

pub async fn a_tick_is_fired_once_whoever_fires_it<S: RecordStore + FunctionStore>(store: &S) {
    let ws = workspace(store, "team").await;
    store.get_or_create_stub(stub(&ws, "stub-1")).await.unwrap();
    store
        .deploy(deployment(
            &ws,
            &[("a", "stub-1")],
            vec![schedule("a", "period:60", 1_000)],
        ))
        .await
        .unwrap();

    // Eight firers read the same row and race.
    let fires: Vec<_> = (0..8)
        .map(|_| fire("sch-a", "stub-1", &ws, 1_000, 1_000))
        .collect();
    let outcomes = join_all(fires.iter().map(|f| store.fire_schedule(f))).await;

    let submitted = outcomes
        .iter()
        .filter(|o| matches!(o, Ok(Fired::Submitted)))
        .count();
    assert_eq!(submitted, 1, "{outcomes:?}");
    assert!(
        outcomes
            .iter()
            .all(|o| matches!(o, Ok(Fired::Submitted | Fired::Stale))),
        "{outcomes:?}"
    );
    let tasks = store.list_tasks(&ws, 100).await.unwrap();
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0].id, "t-sch-a-1000");
    assert_eq!(current(store, &ws).await[0].2, 1_060);
}

pub async fn a_tick_whose_task_exists_moves_on_without_a_second_task<
    S: RecordStore + FunctionStore,
>(
    store: &S,
) {
    let ws = workspace(store, "team").await;
    store.get_or_create_stub(stub(&ws, "stub-1")).await.unwrap();
    store
        .deploy(deployment(
            &ws,
            &[("a", "stub-1")],
            vec![schedule("a", "period:60", 1_000)],
        ))
        .await
        .unwrap();
    // The task of tick 1000 is there already (say, inserted by a firer
    // whose schedule row was then set back by a redeploy).
    let first = fire("sch-a", "stub-1", &ws, 1_000, 1_000);
    store
        .insert_tasks(std::slice::from_ref(&first.task))
        .await
        .unwrap();

    assert_eq!(
        store.fire_schedule(&first).await.unwrap(),
        Fired::AlreadyThere
    );
    assert_eq!(store.list_tasks(&ws, 100).await.unwrap().len(), 1);
    assert_eq!(current(store, &ws).await[0].2, 1_060);

    // A fire for a removed schedule changes nothing.
    store
        .deploy(deployment(&ws, &[("a", "stub-1")], Vec::new()))
        .await
        .unwrap();
    assert_eq!(
        store
            .fire_schedule(&fire("sch-a", "stub-1", &ws, 1_060, 1_060))
            .await
            .unwrap(),
        Fired::Stale
    );
    assert_eq!(store.list_tasks(&ws, 100).await.unwrap().len(), 1);
}

pub async fn another_workspace_does_not_see_a_schedule<S: RecordStore + FunctionStore>(store: &S) {
    let ws = workspace(store, "team").await;
    let other = workspace(store, "other").await;
    store.get_or_create_stub(stub(&ws, "stub-1")).await.unwrap();
    store
        .deploy(deployment(
            &ws,
            &[("a", "stub-1")],
            vec![schedule("a", "period:60", 1_000)],
        ))
        .await
        .unwrap();

    assert_eq!(store.list_schedules(&ws).await.unwrap().len(), 1);
    assert!(store.list_schedules(&other).await.unwrap().is_empty());
}

//! The behaviour every backend must show for what tasks printed.

use levers9_store::{
    FunctionStore, LogQuery, LogStore, NewLogChunk, NewTask, RecordStore, TRUNCATED_STREAM,
};

use super::at;
use super::functions::{stub, workspace};

fn task(ws: &str, id: &str, stub_id: &str) -> NewTask {
    NewTask {
        id: id.to_owned(),
        workspace_id: ws.to_owned(),
        stub_id: stub_id.to_owned(),
        function_name: "resize".to_owned(),
        created_at: at(1),
    }
}

fn chunk(task_id: &str, stream: &str, data: &str, seconds: i64) -> NewLogChunk {
    NewLogChunk {
        task_id: task_id.to_owned(),
        stream: stream.to_owned(),
        data: data.as_bytes().to_vec(),
        at: at(seconds),
    }
}

fn query(ws: &str) -> LogQuery {
    LogQuery {
        workspace_id: ws.to_owned(),
        task_id: None,
        stub_ids: Vec::new(),
        after_id: 0,
        since: None,
        limit: 100,
        tail: false,
    }
}

/// (task, stream, text) of each record.
fn lines(records: &[levers9_store::LogRecord]) -> Vec<(String, String, String)> {
    records
        .iter()
        .map(|r| {
            let text = String::from_utf8_lossy(&r.data).into_owned();
            (r.task_id.clone(), r.stream.clone(), text)
        })
        .collect()
}

fn line(task: &str, stream: &str, text: &str) -> (String, String, String) {
    (task.to_owned(), stream.to_owned(), text.to_owned())
}

pub async fn task_output_is_kept_in_order_per_task_and_per_function<
    S: RecordStore + FunctionStore + LogStore,
>(
    store: &S,
) {
    let ws = workspace(store, "team").await;
    for id in ["stub-1", "stub-2"] {
        store.get_or_create_stub(stub(&ws, id)).await.unwrap();
    }
    store
        .insert_tasks(&[
            task(&ws, "t1", "stub-1"),
            task(&ws, "t2", "stub-1"),
            task(&ws, "t3", "stub-2"),
        ])
        .await
        .unwrap();
    let appended = store
        .append_logs(
            &[
                chunk("t1", "stdout", "one\n", 2),
                chunk("t2", "stdout", "two\n", 3),
                chunk("t1", "stderr", "oops\n", 4),
                chunk("t3", "stdout", "other\n", 5),
                chunk("unknown", "stdout", "lost\n", 5),
            ],
            1 << 20,
        )
        .await
        .unwrap();
    assert_eq!((appended.stored, appended.dropped), (4, 1));
    assert_eq!(appended.workspaces.iter().collect::<Vec<_>>(), [&ws]);

    let of_task = LogQuery {
        task_id: Some("t1".into()),
        ..query(&ws)
    };
    let got = store.list_logs(&of_task).await.unwrap();
    assert_eq!(
        lines(&got),
        [
            line("t1", "stdout", "one\n"),
            line("t1", "stderr", "oops\n")
        ]
    );
    assert!(got
        .iter()
        .all(|r| r.stub_id == "stub-1" && r.workspace_id == ws));
    assert_eq!(got[0].at, at(2));

    let of_stub = LogQuery {
        stub_ids: vec!["stub-1".into()],
        ..query(&ws)
    };
    let got = store.list_logs(&of_stub).await.unwrap();
    assert_eq!(
        lines(&got),
        [
            line("t1", "stdout", "one\n"),
            line("t2", "stdout", "two\n"),
            line("t1", "stderr", "oops\n"),
        ]
    );

    let after = LogQuery {
        after_id: got[1].id,
        ..of_stub.clone()
    };
    assert_eq!(
        lines(&store.list_logs(&after).await.unwrap()),
        [line("t1", "stderr", "oops\n")]
    );
    let tail = LogQuery {
        limit: 2,
        tail: true,
        ..of_stub.clone()
    };
    assert_eq!(
        lines(&store.list_logs(&tail).await.unwrap()),
        [
            line("t2", "stdout", "two\n"),
            line("t1", "stderr", "oops\n")
        ]
    );
    let since = LogQuery {
        since: Some(at(3)),
        ..of_stub
    };
    assert_eq!(store.list_logs(&since).await.unwrap().len(), 2);
}

pub async fn another_workspace_cannot_read_a_tasks_output<
    S: RecordStore + FunctionStore + LogStore,
>(
    store: &S,
) {
    let mine = workspace(store, "mine").await;
    let theirs = workspace(store, "theirs").await;
    store
        .get_or_create_stub(stub(&mine, "stub-1"))
        .await
        .unwrap();
    store
        .insert_tasks(&[task(&mine, "t1", "stub-1")])
        .await
        .unwrap();
    store
        .append_logs(&[chunk("t1", "stdout", "secret\n", 2)], 1 << 20)
        .await
        .unwrap();

    let by_task = LogQuery {
        task_id: Some("t1".into()),
        ..query(&theirs)
    };
    assert!(store.list_logs(&by_task).await.unwrap().is_empty());
    let by_stub = LogQuery {
        stub_ids: vec!["stub-1".into()],
        ..query(&theirs)
    };
    assert!(store.list_logs(&by_stub).await.unwrap().is_empty());
}

pub async fn a_tasks_output_is_cut_at_its_limit_with_one_marker<
    S: RecordStore + FunctionStore + LogStore,
>(
    store: &S,
) {
    let ws = workspace(store, "team").await;
    store.get_or_create_stub(stub(&ws, "stub-1")).await.unwrap();
    store
        .insert_tasks(&[task(&ws, "t1", "stub-1")])
        .await
        .unwrap();
    store
        .append_logs(&[chunk("t1", "stdout", "abcdef", 2)], 10)
        .await
        .unwrap();
    // A later batch: the bytes already kept come from the store.
    let appended = store
        .append_logs(
            &[
                chunk("t1", "stdout", "ghijkl", 3),
                chunk("t1", "stdout", "mnop", 4),
            ],
            10,
        )
        .await
        .unwrap();
    assert_eq!((appended.stored, appended.dropped), (2, 1));
    store
        .append_logs(&[chunk("t1", "stderr", "later", 5)], 10)
        .await
        .unwrap();

    let got = store
        .list_logs(&LogQuery {
            task_id: Some("t1".into()),
            ..query(&ws)
        })
        .await
        .unwrap();
    let got = lines(&got);
    assert_eq!(got.len(), 3, "{got:?}");
    assert_eq!(got[0], line("t1", "stdout", "abcdef"));
    assert_eq!(got[1], line("t1", "stdout", "ghij"));
    assert_eq!(got[2].1, TRUNCATED_STREAM);
    assert!(got[2].2.contains("output truncated"), "{got:?}");
}

pub async fn output_older_than_the_cutoff_is_swept<S: RecordStore + FunctionStore + LogStore>(
    store: &S,
) {
    let ws = workspace(store, "team").await;
    store.get_or_create_stub(stub(&ws, "stub-1")).await.unwrap();
    store
        .insert_tasks(&[task(&ws, "t1", "stub-1")])
        .await
        .unwrap();
    store
        .append_logs(
            &[
                chunk("t1", "stdout", "old\n", 2),
                chunk("t1", "stdout", "new\n", 20),
            ],
            1 << 20,
        )
        .await
        .unwrap();

    assert_eq!(store.delete_logs_before(at(10)).await.unwrap(), 1);

    let got = store
        .list_logs(&LogQuery {
            task_id: Some("t1".into()),
            ..query(&ws)
        })
        .await
        .unwrap();
    assert_eq!(lines(&got), [line("t1", "stdout", "new\n")]);
}

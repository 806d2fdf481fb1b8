//! The behaviour every backend must show (of `RecordStore`, and of `SealedStore` and
//! `FunctionStore` in the submodules), run by `tests/postgres.rs` and `tests/sqlite.rs`
//! through `record_store_suite!`.

use chrono::{DateTime, Duration, TimeZone, Utc};
use futures::future::join_all;
use levers9_store::{NewToken, NewWorkspace, RecordStore, StoreError, TokenRecord, TokenType};
use uuid::Uuid;

mod deployments;
mod endpoints;
mod functions;
mod logs;
mod machines;
mod schedules;
mod sealed;
mod task_lifecycle;
pub use deployments::*;
pub use endpoints::*;
pub use functions::*;
pub use logs::*;
pub use machines::*;
pub use schedules::*;
pub use sealed::*;
pub use task_lifecycle::*;

/// Generates one `#[tokio::test]` per check, each on a fresh store from `$fresh`,
/// an async fn returning `(store, guard)` where the guard must outlive the test.
macro_rules! record_store_suite {
    ($fresh:path) => {
        $crate::suite::record_store_suite!(@tests $fresh;
            ping_answers,
            empty_install_has_no_workspace,
            bootstrap_creates_the_first_workspace_and_its_token,
            bootstrap_does_nothing_once_a_workspace_exists,
            bootstrap_creates_exactly_one_workspace_under_a_race,
            created_workspace_reads_back_as_returned,
            unknown_workspace_is_none,
            the_first_workspace_is_the_oldest,
            workspace_name_clash_is_already_exists,
            workspace_is_not_created_when_its_token_clashes,
            duplicate_token_hash_is_already_exists_without_the_hash,
            token_of_unknown_workspace_is_rejected,
            token_is_found_by_hash_with_its_workspace,
            unknown_hash_finds_nothing,
            list_tokens_shows_only_that_workspace_oldest_first,
            revoked_token_is_found_with_its_revocation_time,
            revoking_twice_keeps_the_first_revocation_time,
            token_of_another_workspace_cannot_be_revoked,
            touch_records_last_use,
            touch_never_moves_last_use_backwards,
            times_are_kept_to_the_microsecond,
            sealed_value_round_trips,
            sealed_values_are_listed_per_workspace_and_kind,
            update_and_delete_touch_only_their_row,
            rows_not_on_a_key_are_walked_in_pages,
            reseal_swaps_only_an_unchanged_row,
            concurrent_reseals_of_one_row_have_one_winner,
            objects_are_put_idempotently_per_workspace,
            a_stub_is_created_once_and_then_returned_as_stored,
            concurrent_twins_of_a_stub_store_one_row,
            another_workspace_cannot_read_or_take_a_stub,
            stubs_are_listed_newest_first_per_workspace,
            a_redeploy_is_the_next_version_and_replaces_the_functions,
            a_deployment_names_only_stubs_of_its_workspace,
            deployed_stubs_are_those_of_every_current_version_once,
            an_endpoint_is_found_by_workspace_name_and_goes_with_a_redeploy,
            an_endpoint_name_belongs_to_one_app_of_a_workspace,
            a_redeploy_replaces_the_apps_schedules_and_keeps_unchanged_ticks,
            a_schedule_for_a_function_outside_the_deploy_is_refused_and_nothing_is_stored,
            due_schedules_are_those_whose_tick_has_come_soonest_first,
            a_tick_is_fired_once_whoever_fires_it,
            a_tick_whose_task_exists_moves_on_without_a_second_task,
            another_workspace_does_not_see_a_schedule,
            thousands_of_tasks_are_inserted_at_once_and_listed_newest_first,
            a_batch_of_tasks_is_stored_all_or_none,
            another_workspace_cannot_read_a_task,
            a_started_task_finishes_complete,
            many_tasks_start_and_end_in_one_call_and_finals_stay,
            starts_retries_and_ends_move_together_or_not_at_all,
            new_tasks_are_inserted_and_moved_in_one_transaction,
            a_late_result_cannot_overwrite_a_cancel,
            a_retried_task_starts_again_with_more_attempts,
            a_task_lost_with_its_worker_goes_back_to_pending_under_the_same_attempt,
            unfinished_tasks_leave_out_final_ones,
            runtime_pools_are_unique_by_name_and_deleted_once,
            a_join_token_is_redeemed_once_for_a_bound_worker_credential,
            an_expired_join_token_is_refused_and_stores_nothing,
            concurrent_redemptions_of_one_token_have_one_winner,
            deleting_a_machine_revokes_its_credential,
            task_output_is_kept_in_order_per_task_and_per_function,
            another_workspace_cannot_read_a_tasks_output,
            a_tasks_output_is_cut_at_its_limit_with_one_marker,
            output_older_than_the_cutoff_is_swept,
        );
    };
    (@tests $fresh:path; $($check:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $check() {
                let (store, _guard) = $fresh().await;
                suite::$check(&store).await;
            }
        )*
    };
}
pub(crate) use record_store_suite;

/// A fixed, whole-second instant plus `seconds`, so comparisons are exact on both backends.
fn at(seconds: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2025, 3, 14, 15, 9, 26).unwrap() + Duration::seconds(seconds)
}

fn new_workspace(name: &str) -> NewWorkspace {
    NewWorkspace {
        id: Uuid::now_v7().to_string(),
        name: name.to_owned(),
        created_at: at(0),
    }
}

/// A token with a random 32-byte hash, as a real SHA-256 would look.
fn new_token(workspace_id: &str, token_type: TokenType, created_at: DateTime<Utc>) -> NewToken {
    let hash = [Uuid::new_v4().into_bytes(), Uuid::new_v4().into_bytes()].concat();
    NewToken {
        id: Uuid::now_v7().to_string(),
        workspace_id: workspace_id.to_owned(),
        token_type,
        description: format!("{token_type} token"),
        hash,
        created_at,
    }
}

/// A workspace with its admin token, created through `create_workspace`.
async fn workspace_with_token(store: &dyn RecordStore, name: &str) -> (String, NewToken) {
    let workspace = new_workspace(name);
    let token = new_token(&workspace.id, TokenType::Admin, at(0));
    store
        .create_workspace(workspace.clone(), token.clone())
        .await
        .unwrap();
    (workspace.id, token)
}

/// The stored token with this hash, if any (its workspace left out).
async fn stored(store: &dyn RecordStore, token: &NewToken) -> Option<TokenRecord> {
    let found = store.find_token_by_hash(&token.hash).await.unwrap();
    found.map(|(record, _)| record)
}

pub async fn ping_answers(store: &dyn RecordStore) {
    store.ping().await.unwrap();
}

pub async fn empty_install_has_no_workspace(store: &dyn RecordStore) {
    assert!(!store.has_workspace().await.unwrap());
    assert_eq!(store.first_workspace().await.unwrap(), None);
}

pub async fn bootstrap_creates_the_first_workspace_and_its_token(store: &dyn RecordStore) {
    let workspace = new_workspace("main");
    let token = new_token(&workspace.id, TokenType::Admin, at(1));

    let created = store
        .bootstrap_first_workspace(workspace.clone(), token.clone())
        .await
        .unwrap()
        .expect("an empty install is bootstrapped");

    assert_eq!(created.id, workspace.id);
    assert_eq!(created.name, "main");
    assert!(store.has_workspace().await.unwrap());
    assert_eq!(
        store.get_workspace(&workspace.id).await.unwrap(),
        Some(created.clone())
    );
    let (found, its_workspace) = store
        .find_token_by_hash(&token.hash)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.id, token.id);
    assert_eq!(found.token_type, TokenType::Admin);
    assert_eq!(its_workspace, created);
}

pub async fn bootstrap_does_nothing_once_a_workspace_exists(store: &dyn RecordStore) {
    let (first, _) = workspace_with_token(store, "existing").await;
    let workspace = new_workspace("second");
    let token = new_token(&workspace.id, TokenType::Admin, at(0));

    let outcome = store
        .bootstrap_first_workspace(workspace.clone(), token.clone())
        .await
        .unwrap();

    assert_eq!(outcome, None);
    assert_eq!(store.get_workspace(&workspace.id).await.unwrap(), None);
    assert_eq!(stored(store, &token).await, None);
    let oldest = store.first_workspace().await.unwrap().expect("a workspace");
    assert_eq!(oldest.id, first);
}

pub async fn bootstrap_creates_exactly_one_workspace_under_a_race(store: &dyn RecordStore) {
    let attempts: Vec<(NewWorkspace, NewToken)> = (0..16)
        .map(|_| {
            let workspace = new_workspace("main");
            let token = new_token(&workspace.id, TokenType::Admin, at(0));
            (workspace, token)
        })
        .collect();

    let outcomes = join_all(
        attempts
            .iter()
            .map(|(w, t)| store.bootstrap_first_workspace(w.clone(), t.clone())),
    )
    .await;

    let winners: Vec<_> = outcomes
        .into_iter()
        .filter_map(|outcome| outcome.unwrap())
        .collect();
    assert_eq!(winners.len(), 1, "exactly one bootstrap wins: {winners:?}");
    assert!(store.has_workspace().await.unwrap());
    let mut stored_tokens = 0;
    for (workspace, token) in &attempts {
        let won = workspace.id == winners[0].id;
        assert_eq!(
            store.get_workspace(&workspace.id).await.unwrap().is_some(),
            won
        );
        stored_tokens += store.list_tokens(&workspace.id).await.unwrap().len();
        assert_eq!(stored(store, token).await.is_some(), won);
    }
    assert_eq!(stored_tokens, 1);
}

pub async fn created_workspace_reads_back_as_returned(store: &dyn RecordStore) {
    let workspace = new_workspace("team");
    let token = new_token(&workspace.id, TokenType::Admin, at(0));

    let created = store
        .create_workspace(workspace.clone(), token)
        .await
        .unwrap();

    assert_eq!(created.id, workspace.id);
    assert_eq!(created.name, workspace.name);
    assert_eq!(created.created_at, workspace.created_at);
    assert_eq!(
        store.get_workspace(&workspace.id).await.unwrap(),
        Some(created)
    );
}

pub async fn unknown_workspace_is_none(store: &dyn RecordStore) {
    let missing = Uuid::now_v7().to_string();
    assert_eq!(store.get_workspace(&missing).await.unwrap(), None);
}

pub async fn the_first_workspace_is_the_oldest(store: &dyn RecordStore) {
    assert_eq!(store.first_workspace().await.unwrap(), None);
    let mut later = new_workspace("later");
    later.created_at = at(60);
    let first = new_workspace("first");
    for workspace in [later, first.clone()] {
        let token = new_token(&workspace.id, TokenType::Admin, at(0));
        store.create_workspace(workspace, token).await.unwrap();
    }
    let found = store.first_workspace().await.unwrap().expect("a workspace");
    assert_eq!(found.id, first.id);
}

pub async fn workspace_name_clash_is_already_exists(store: &dyn RecordStore) {
    workspace_with_token(store, "team").await;
    let workspace = new_workspace("team");
    let token = new_token(&workspace.id, TokenType::Admin, at(0));

    let err = store
        .create_workspace(workspace.clone(), token.clone())
        .await
        .unwrap_err();

    assert!(matches!(err, StoreError::AlreadyExists(_)), "{err:?}");
    assert!(err.to_string().contains("\"team\""), "{err}");
    assert_eq!(stored(store, &token).await, None);
}

pub async fn workspace_is_not_created_when_its_token_clashes(store: &dyn RecordStore) {
    let (_, taken) = workspace_with_token(store, "first").await;
    let workspace = new_workspace("second");
    let mut token = new_token(&workspace.id, TokenType::Admin, at(0));
    token.hash = taken.hash;

    let err = store
        .create_workspace(workspace.clone(), token)
        .await
        .unwrap_err();

    assert!(matches!(err, StoreError::AlreadyExists(_)), "{err:?}");
    assert_eq!(store.get_workspace(&workspace.id).await.unwrap(), None);
}

pub async fn duplicate_token_hash_is_already_exists_without_the_hash(store: &dyn RecordStore) {
    let (workspace_id, taken) = workspace_with_token(store, "team").await;
    let mut token = new_token(&workspace_id, TokenType::Worker, at(1));
    token.hash = taken.hash.clone();

    let err = store.insert_token(token).await.unwrap_err();

    assert!(matches!(err, StoreError::AlreadyExists(_)), "{err:?}");
    let shown = format!("{err} {err:?}");
    let hex: String = taken.hash.iter().map(|b| format!("{b:02x}")).collect();
    assert!(!shown.to_lowercase().contains(&hex), "{shown}");
    assert!(!shown.contains(&format!("{:?}", taken.hash)), "{shown}");
}

pub async fn token_of_unknown_workspace_is_rejected(store: &dyn RecordStore) {
    let token = new_token(&Uuid::now_v7().to_string(), TokenType::Admin, at(0));

    assert!(store.insert_token(token.clone()).await.is_err());
    assert_eq!(stored(store, &token).await, None);
}

pub async fn token_is_found_by_hash_with_its_workspace(store: &dyn RecordStore) {
    let (workspace_id, _) = workspace_with_token(store, "team").await;
    let token = new_token(&workspace_id, TokenType::Machine, at(5));

    let inserted = store.insert_token(token.clone()).await.unwrap();
    let (found, workspace) = store
        .find_token_by_hash(&token.hash)
        .await
        .unwrap()
        .unwrap();

    assert_eq!(found, inserted);
    assert_eq!(found.token_type, TokenType::Machine);
    assert_eq!(found.description, "machine token");
    assert_eq!(found.created_at, at(5));
    assert_eq!(found.last_used_at, None);
    assert_eq!(found.revoked_at, None);
    assert_eq!(workspace.id, workspace_id);
    assert_eq!(workspace.name, "team");
}

pub async fn unknown_hash_finds_nothing(store: &dyn RecordStore) {
    workspace_with_token(store, "team").await;
    assert!(store.find_token_by_hash(&[7; 32]).await.unwrap().is_none());
}

pub async fn list_tokens_shows_only_that_workspace_oldest_first(store: &dyn RecordStore) {
    let (mine, first) = workspace_with_token(store, "mine").await;
    let (theirs, _) = workspace_with_token(store, "theirs").await;
    let newest = new_token(&mine, TokenType::Worker, at(20));
    let middle = new_token(&mine, TokenType::Workspace, at(10));
    store.insert_token(newest.clone()).await.unwrap();
    store.insert_token(middle.clone()).await.unwrap();
    store
        .insert_token(new_token(&theirs, TokenType::Worker, at(15)))
        .await
        .unwrap();

    let ids: Vec<String> = store
        .list_tokens(&mine)
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.id)
        .collect();

    assert_eq!(ids, [first.id, middle.id, newest.id]);
    assert!(store
        .list_tokens("no-such-workspace")
        .await
        .unwrap()
        .is_empty());
}

pub async fn revoked_token_is_found_with_its_revocation_time(store: &dyn RecordStore) {
    let (workspace_id, token) = workspace_with_token(store, "team").await;

    let revoked = store
        .revoke_token(&workspace_id, &token.id, at(60))
        .await
        .unwrap()
        .unwrap();

    assert_eq!(revoked.revoked_at, Some(at(60)));
    let found = stored(store, &token).await.unwrap();
    assert_eq!(found.revoked_at, Some(at(60)));
    assert_eq!(found, revoked);
}

pub async fn revoking_twice_keeps_the_first_revocation_time(store: &dyn RecordStore) {
    let (workspace_id, token) = workspace_with_token(store, "team").await;
    store
        .revoke_token(&workspace_id, &token.id, at(60))
        .await
        .unwrap();

    let again = store
        .revoke_token(&workspace_id, &token.id, at(120))
        .await
        .unwrap()
        .unwrap();

    assert_eq!(again.revoked_at, Some(at(60)));
}

pub async fn token_of_another_workspace_cannot_be_revoked(store: &dyn RecordStore) {
    let (mine, _) = workspace_with_token(store, "mine").await;
    let (_, theirs) = workspace_with_token(store, "theirs").await;

    let foreign = store.revoke_token(&mine, &theirs.id, at(60)).await.unwrap();
    let missing = store
        .revoke_token(&mine, "no-such-token", at(60))
        .await
        .unwrap();

    assert_eq!(foreign, None);
    assert_eq!(missing, None);
    let found = stored(store, &theirs).await.unwrap();
    assert_eq!(found.revoked_at, None);
}

pub async fn touch_records_last_use(store: &dyn RecordStore) {
    let (_, token) = workspace_with_token(store, "team").await;

    store.touch_token(&token.id, at(30)).await.unwrap();

    let found = stored(store, &token).await.unwrap();
    assert_eq!(found.last_used_at, Some(at(30)));
    store.touch_token("no-such-token", at(30)).await.unwrap();
}

pub async fn touch_never_moves_last_use_backwards(store: &dyn RecordStore) {
    let (_, token) = workspace_with_token(store, "team").await;
    store.touch_token(&token.id, at(30)).await.unwrap();
    let later = at(30) + Duration::milliseconds(1);
    store.touch_token(&token.id, later).await.unwrap();

    store.touch_token(&token.id, at(30)).await.unwrap();

    let found = stored(store, &token).await.unwrap();
    assert_eq!(found.last_used_at, Some(later));
}

pub async fn times_are_kept_to_the_microsecond(store: &dyn RecordStore) {
    let precise = at(0) + Duration::nanoseconds(123_456_789);
    let micros = at(0) + Duration::microseconds(123_456);
    let mut workspace = new_workspace("team");
    workspace.created_at = precise;
    let token = new_token(&workspace.id, TokenType::Admin, precise);

    let created = store
        .create_workspace(workspace.clone(), token.clone())
        .await
        .unwrap();
    store.touch_token(&token.id, precise).await.unwrap();

    assert_eq!(created.created_at, micros);
    assert_eq!(
        store.get_workspace(&workspace.id).await.unwrap(),
        Some(created)
    );
    let found = stored(store, &token).await.unwrap();
    assert_eq!(found.created_at, micros);
    assert_eq!(found.last_used_at, Some(micros));
}

//! The behaviour every `MachineStore` backend must show.

use chrono::Duration;
use futures::future::join_all;
use levers9_store::{
    JoinOutcome, JoinRedemption, MachineState, MachineStore, NewMachine, PoolRecord, RecordStore,
    StoreError, TokenType,
};
use uuid::Uuid;

use super::{at, new_token, new_workspace};

async fn workspace<S: RecordStore>(store: &S) -> String {
    let ws = new_workspace("machines");
    let token = new_token(&ws.id, TokenType::Admin, at(0));
    store.create_workspace(ws, token).await.unwrap().id
}

fn machine(workspace_id: &str, join_hash: &[u8], expires_in: i64) -> NewMachine {
    NewMachine {
        id: Uuid::now_v7().to_string(),
        workspace_id: workspace_id.to_owned(),
        pool: "boxes".into(),
        join_hash: join_hash.to_vec(),
        join_expires_at: at(expires_in),
        created_at: at(0),
    }
}

fn redemption(join_hash: &[u8], seconds: i64) -> JoinRedemption {
    JoinRedemption {
        join_hash: join_hash.to_vec(),
        at: at(seconds),
        hostname: "box-1".into(),
        capacity: "{}".into(),
        credential_id: Uuid::now_v7().to_string(),
        credential_hash: Uuid::new_v4().into_bytes().repeat(2),
    }
}

pub async fn runtime_pools_are_unique_by_name_and_deleted_once<S: MachineStore>(store: &S) {
    let pool = PoolRecord {
        name: "boxes".into(),
        runtime: "runc".into(),
        gpu_type: "L40S".into(),
        created_at: at(0),
    };
    assert_eq!(store.insert_pool(pool.clone()).await.unwrap(), pool);
    assert!(matches!(
        store.insert_pool(pool.clone()).await,
        Err(StoreError::AlreadyExists(_))
    ));
    assert_eq!(store.list_pools().await.unwrap(), vec![pool.clone()]);
    assert_eq!(store.get_pool("boxes").await.unwrap(), Some(pool));
    assert!(store.delete_pool("boxes").await.unwrap());
    assert!(!store.delete_pool("boxes").await.unwrap());
    assert_eq!(store.get_pool("boxes").await.unwrap(), None);
}

pub async fn a_join_token_is_redeemed_once_for_a_bound_worker_credential<
    S: RecordStore + MachineStore,
>(
    store: &S,
) {
    let ws = workspace(store).await;
    let made = store
        .insert_machine(machine(&ws, b"join-1", 3600))
        .await
        .unwrap();
    assert_eq!(made.state, MachineState::Pending);
    assert_eq!(made.token_id, None);

    let first = redemption(b"join-1", 10);
    let JoinOutcome::Joined(joined) = store.redeem_join(first.clone()).await.unwrap() else {
        panic!("the first redemption joins");
    };
    assert_eq!(joined.state, MachineState::Joined);
    assert_eq!(joined.hostname, "box-1");
    assert_eq!(joined.join_used_at, Some(at(10)));
    assert_eq!(
        joined.token_id.as_deref(),
        Some(first.credential_id.as_str())
    );
    let (token, _) = store
        .find_token_by_hash(&first.credential_hash)
        .await
        .unwrap()
        .expect("the credential is stored by its hash");
    assert_eq!(token.token_type, TokenType::Worker);
    assert_eq!(token.workspace_id, ws);
    assert_eq!(
        store
            .machine_by_token(&token.id)
            .await
            .unwrap()
            .map(|m| m.id),
        Some(made.id.clone())
    );

    let again = store.redeem_join(redemption(b"join-1", 11)).await.unwrap();
    assert!(
        matches!(again, JoinOutcome::AlreadyUsed(ref m) if m.id == made.id),
        "{again:?}"
    );
    assert_eq!(
        store
            .redeem_join(redemption(b"never-issued", 11))
            .await
            .unwrap(),
        JoinOutcome::Unknown
    );
}

pub async fn an_expired_join_token_is_refused_and_stores_nothing<S: RecordStore + MachineStore>(
    store: &S,
) {
    let ws = workspace(store).await;
    store
        .insert_machine(machine(&ws, b"join-2", 60))
        .await
        .unwrap();
    let late = redemption(b"join-2", 60 + Duration::minutes(1).num_seconds());
    let outcome = store.redeem_join(late.clone()).await.unwrap();
    assert!(matches!(outcome, JoinOutcome::Expired(_)), "{outcome:?}");
    assert!(store
        .find_token_by_hash(&late.credential_hash)
        .await
        .unwrap()
        .is_none());
}

pub async fn concurrent_redemptions_of_one_token_have_one_winner<S: RecordStore + MachineStore>(
    store: &S,
) {
    let ws = workspace(store).await;
    store
        .insert_machine(machine(&ws, b"join-3", 3600))
        .await
        .unwrap();
    let outcomes = join_all((0..8).map(|_| store.redeem_join(redemption(b"join-3", 5)))).await;
    let joined = outcomes
        .iter()
        .filter(|o| matches!(o, Ok(JoinOutcome::Joined(_))))
        .count();
    assert_eq!(joined, 1, "{outcomes:?}");
}

pub async fn deleting_a_machine_revokes_its_credential<S: RecordStore + MachineStore>(store: &S) {
    let ws = workspace(store).await;
    let made = store
        .insert_machine(machine(&ws, b"join-4", 3600))
        .await
        .unwrap();
    let redeemed = redemption(b"join-4", 1);
    store.redeem_join(redeemed.clone()).await.unwrap();
    let drained = store
        .set_machine_state(&made.id, MachineState::Draining)
        .await
        .unwrap()
        .expect("the machine exists");
    assert_eq!(drained.state, MachineState::Draining);
    let gone = store.delete_machine(&made.id, at(2)).await.unwrap();
    assert_eq!(gone.map(|m| m.id), Some(made.id.clone()));
    let (token, _) = store
        .find_token_by_hash(&redeemed.credential_hash)
        .await
        .unwrap()
        .expect("the credential row stays, revoked");
    assert_eq!(token.revoked_at, Some(at(2)));
    assert_eq!(store.get_machine(&made.id).await.unwrap(), None);
    assert_eq!(store.delete_machine(&made.id, at(3)).await.unwrap(), None);
    assert_eq!(store.list_machines().await.unwrap(), vec![]);
}

//! One build of an image id across the controlplane replicas that share the
//! hot state. The replica holding the lease `image-build:<id>` builds,
//! renews the lease while it does, and publishes the build's events on the
//! channel of the same name. Another replica asked for the id follows that
//! channel; when the lease comes free (the build ended, or its replica died
//! and the lease expired) it takes the lease and answers from the registry,
//! or builds the image itself.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use levers9_api::v1::{build_image_event, BuildImageEvent};
use levers9_state::{keys, HotState};
use prost::Message;
use tokio::sync::{broadcast, watch};

use super::build::{self, BuildEvent, BuildRequest};
use super::ImageServiceError;
use crate::Shared;

/// How long a replica that died mid-build keeps the others waiting.
const LEASE_TTL: Duration = Duration::from_secs(30);
/// How often a follower tries the lease.
const RETRY: Duration = Duration::from_secs(2);
const EVENT: u8 = b'e';
const FAILED: u8 = b'f';

/// Builds `request` here if no other replica is building it, else follows
/// that build; returns the last event (Done or Failed).
pub(super) async fn build_once(
    shared: &Arc<Shared>,
    request: &BuildRequest,
    events: &broadcast::Sender<BuildEvent>,
) -> Result<BuildEvent, ImageServiceError> {
    let state = &shared.state;
    let id = request.canonical.id();
    let name = keys::image_build(&id);
    let holder = &shared.images.holder;
    // Subscribed before the first try, so no event of a build that holds
    // the lease now is missed.
    let mut followed = state.subscribe(&name).await?;
    let mut waited = false;
    while !state.acquire_lease(&name, holder, LEASE_TTL).await? {
        if !waited {
            waited = true;
            tracing::info!(image_id = %id, "following the build on another replica");
            let _ = events.send(build::log(format!(
                "waiting for the build of image {id} on another replica"
            )));
        }
        let deadline = tokio::time::Instant::now() + RETRY;
        while let Ok(message) = tokio::time::timeout_at(deadline, followed.next()).await {
            let Some(message) = message else {
                // The subscription ended (the hot state went away): the
                // lease and the registry still tell how the build ends.
                tokio::time::sleep_until(deadline).await;
                break;
            };
            match decode(&message) {
                Some(event) if is_last(&event) => return Ok(event),
                Some(event) => {
                    let _ = events.send(event);
                }
                None => {
                    tracing::warn!(image_id = %id, "unreadable build event from another replica")
                }
            }
        }
    }
    drop(followed);
    let outcome = lead(shared, request, events, &name, waited).await;
    let _ = state.release_lease(&name, holder).await;
    Ok(outcome)
}

/// The build, while this replica holds the lease `name`.
async fn lead(
    shared: &Arc<Shared>,
    request: &BuildRequest,
    events: &broadcast::Sender<BuildEvent>,
    name: &str,
    waited: bool,
) -> BuildEvent {
    let state = shared.state.clone();
    let holder = shared.images.holder.clone();
    let (stop, stopped) = watch::channel(false);
    let renew = tokio::spawn(renew(
        state.clone(),
        name.to_owned(),
        holder,
        stopped.clone(),
    ));
    let tee = tokio::spawn(publish(
        state.clone(),
        name.to_owned(),
        events.subscribe(),
        stopped,
    ));
    let outcome = async {
        let id = request.canonical.id();
        if waited {
            // The other replica's build ended (or its replica died).
            if let Some(digest) = shared.images.existing(&id).await? {
                return Ok(build::done(&id, shared.images.reference(&digest), true));
            }
            let _ = events.send(build::log(format!(
                "the build of image {id} on another replica ended without an image: \
                 building it here"
            )));
        }
        build::run(shared, request, events).await
    }
    .await;
    let last = outcome.unwrap_or_else(|error| BuildEvent::Failed(error.to_string()));
    let _ = stop.send(true);
    let _ = renew.await;
    let _ = tee.await;
    if let Err(error) = state.publish(name, &encode(&last)).await {
        tracing::warn!(%error, "cannot tell other replicas how the image build ended");
    }
    last
}

/// Keeps the lease while the build runs.
async fn renew(
    state: Arc<dyn HotState>,
    name: String,
    holder: String,
    mut stopped: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            _ = stopped.changed() => return,
            () = tokio::time::sleep(LEASE_TTL / 3) => {}
        }
        match state.acquire_lease(&name, &holder, LEASE_TTL).await {
            Ok(true) => {}
            // Another replica may build it too now: the results are the
            // same image, so this build goes on.
            Ok(false) => tracing::warn!(lease = %name, "lost the image build lease"),
            Err(error) => {
                tracing::warn!(%error, lease = %name, "cannot renew the image build lease")
            }
        }
    }
}

/// Passes this replica's build events to the replicas following it, until
/// `stopped`, and then the ones left.
async fn publish(
    state: Arc<dyn HotState>,
    name: String,
    mut events: broadcast::Receiver<BuildEvent>,
    mut stopped: watch::Receiver<bool>,
) {
    loop {
        let event = tokio::select! {
            biased;
            event = events.recv() => event,
            _ = stopped.changed() => break,
        };
        match event {
            Ok(event) => {
                let _ = state.publish(&name, &encode(&event)).await;
            }
            Err(broadcast::error::RecvError::Lagged(_)) => {}
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
    while let Ok(event) = events.try_recv() {
        let _ = state.publish(&name, &encode(&event)).await;
    }
}

fn is_last(event: &BuildEvent) -> bool {
    match event {
        BuildEvent::Failed(_) => true,
        BuildEvent::Event(event) => matches!(event.kind, Some(build_image_event::Kind::Done(_))),
    }
}

fn encode(event: &BuildEvent) -> Vec<u8> {
    match event {
        BuildEvent::Event(event) => {
            let mut out = vec![EVENT];
            out.extend(event.encode_to_vec());
            out
        }
        BuildEvent::Failed(message) => {
            let mut out = vec![FAILED];
            out.extend(message.as_bytes());
            out
        }
    }
}

fn decode(message: &[u8]) -> Option<BuildEvent> {
    match message.split_first()? {
        (&EVENT, rest) => BuildImageEvent::decode(rest).ok().map(BuildEvent::Event),
        (&FAILED, rest) => Some(BuildEvent::Failed(
            String::from_utf8_lossy(rest).into_owned(),
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_and_failures_cross_replicas_unchanged() {
        let line = build::log("step output".into());
        let BuildEvent::Event(sent) = &line else {
            panic!("a log line is an event")
        };
        let Some(BuildEvent::Event(got)) = decode(&encode(&line)) else {
            panic!("decoded")
        };
        assert_eq!(&got, sent);
        assert!(!is_last(&line));
        let failed = BuildEvent::Failed("image x: step 1 failed".into());
        let decoded = decode(&encode(&failed)).expect("decoded");
        assert!(matches!(&decoded, BuildEvent::Failed(m) if m == "image x: step 1 failed"));
        assert!(is_last(&decoded));
        assert!(is_last(&build::done("id", "r@sha256:00".into(), false)));
        assert!(decode(b"").is_none() && decode(b"?x").is_none());
    }
}

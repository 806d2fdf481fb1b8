//! Channels: fire-and-forget messages to whoever listens now.

use futures::stream::BoxStream;

use crate::StateError;

/// Publish/subscribe on named channels. Nothing is stored: a message
/// reaches the subscribers of the moment, and a subscriber that is not
/// listening misses it.
#[async_trait::async_trait]
pub trait PubSub: Send + Sync {
    /// Publishes a message to every current subscriber of channel; returns
    /// nothing about receivers.
    async fn publish(&self, channel: &str, message: &[u8]) -> Result<(), StateError>;

    /// Subscribes to a channel: a stream of messages published after this
    /// call returns.
    async fn subscribe(&self, channel: &str) -> Result<BoxStream<'static, Vec<u8>>, StateError>;
}

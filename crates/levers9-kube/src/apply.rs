//! Server-side apply, the one way this crate writes an object it names:
//! the request carries the name, so a Role can be limited to it.

use kube::api::{Patch, PatchParams};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// Creates `object` or brings it to what it says, as `field_manager`,
/// taking over fields another manager set.
pub(crate) async fn apply<K>(
    api: Api<K>,
    object: &K,
    field_manager: &str,
) -> Result<(), kube::Error>
where
    K: Resource<DynamicType = ()> + Clone + Serialize + DeserializeOwned + std::fmt::Debug,
{
    let name = object.meta().name.clone().unwrap_or_default();
    let params = PatchParams::apply(field_manager).force();
    api.patch(&name, &params, &Patch::Apply(object)).await?;
    Ok(())
}

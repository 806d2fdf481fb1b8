//! The records of web endpoints: functions of deployed apps served over HTTP
//! under a name of their workspace.

/// An endpoint named by a deploy, for
/// [`NewDeployment::endpoints`](crate::NewDeployment::endpoints).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEndpoint {
    /// A function of the deploy (its stub is the deploy's).
    pub function_name: String,
    /// The name it is served under, unique in the workspace.
    pub name: String,
    /// Served without a token.
    pub public: bool,
    /// What it serves: [`EndpointKind`].
    pub kind: EndpointKind,
}

/// What an endpoint serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndpointKind {
    /// A function called with the request's JSON object as keyword
    /// arguments; its value is the answer, as JSON.
    Json,
    /// An ASGI app, sent the whole HTTP request under the endpoint's path.
    Asgi,
}

impl EndpointKind {
    /// As stored.
    pub fn as_str(self) -> &'static str {
        match self {
            EndpointKind::Json => "json",
            EndpointKind::Asgi => "asgi",
        }
    }

    /// As stored; None for a value no version wrote.
    pub fn parse(stored: &str) -> Option<Self> {
        match stored {
            "json" => Some(EndpointKind::Json),
            "asgi" => Some(EndpointKind::Asgi),
            _ => None,
        }
    }
}

/// An endpoint of the current deploy of an app.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointRecord {
    /// The workspace that owns it.
    pub workspace_id: String,
    /// The name it is served under.
    pub name: String,
    /// The app whose deploy named it.
    pub app_name: String,
    /// The function within the app.
    pub function_name: String,
    /// The stub its requests call.
    pub stub_id: String,
    /// Served without a token.
    pub public: bool,
    /// What it serves.
    pub kind: EndpointKind,
    /// The app version that set it.
    pub version: u32,
}

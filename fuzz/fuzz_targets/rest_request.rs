//! The REST mapping's reading of a request: the JSON body as the request
//! of each call that takes one, and the headers as gRPC metadata. Anyone
//! who reaches the controlplane's HTTP port can send these, before any
//! token is checked.
//!
//! Beyond never panicking: a refused body is INVALID_ARGUMENT (a 400, not
//! a 500), an accepted one written back as JSON reads as the same request,
//! and the metadata holds only `authorization` and the `Grpc-Metadata-`
//! headers, each with its header's value.

#![no_main]

use arbitrary::Arbitrary;
use http::{HeaderMap, HeaderName, HeaderValue};
use levers9_api::v1::{
    AuthorizeRequest, CreateSecretRequest, CreateTokenRequest, CreateVolumeRequest,
    CreateWorkspaceRequest, RunContainerRequest, SetStorageCredentialsRequest, UpdateSecretRequest,
};
use levers9_controlplane::rest::{message_of, metadata_from_headers};
use libfuzzer_sys::fuzz_target;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// A header's name: the two kinds the mapping reads are made often, so the
/// fuzzer need not find them byte by byte.
#[derive(Arbitrary, Debug)]
enum Name<'a> {
    Authorization,
    Metadata(&'a str),
    Other(&'a [u8]),
}

#[derive(Arbitrary, Debug)]
struct Request<'a> {
    headers: Vec<(Name<'a>, &'a [u8])>,
    body: &'a [u8],
}

/// Reads `body` as a `Req` and checks what came out.
fn body_as<Req>(body: &[u8])
where
    Req: DeserializeOwned + Default + Serialize + PartialEq + std::fmt::Debug,
{
    match message_of::<Req>(body) {
        Ok(message) => {
            let written = serde_json::to_vec(&message).expect("a request serialises");
            let again = message_of::<Req>(&written)
                .unwrap_or_else(|e| panic!("{message:?} written as JSON is refused: {e:?}"));
            assert_eq!(again, message);
        }
        Err(status) => assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}"),
    }
}

fuzz_target!(|request: Request<'_>| {
    body_as::<AuthorizeRequest>(request.body);
    body_as::<CreateTokenRequest>(request.body);
    body_as::<CreateWorkspaceRequest>(request.body);
    body_as::<SetStorageCredentialsRequest>(request.body);
    body_as::<CreateSecretRequest>(request.body);
    body_as::<UpdateSecretRequest>(request.body);
    body_as::<CreateVolumeRequest>(request.body);
    body_as::<RunContainerRequest>(request.body);

    let mut headers = HeaderMap::new();
    for (name, value) in &request.headers {
        let name = match name {
            Name::Authorization => Ok(http::header::AUTHORIZATION),
            Name::Metadata(name) => HeaderName::try_from(format!("grpc-metadata-{name}")),
            Name::Other(name) => HeaderName::from_bytes(name),
        };
        if let (Ok(name), Ok(value)) = (name, HeaderValue::from_bytes(value)) {
            headers.append(name, value);
        }
    }
    let metadata = metadata_from_headers(&headers);
    for entry in metadata.iter() {
        let tonic::metadata::KeyAndValueRef::Ascii(key, value) = entry else {
            panic!("binary metadata from REST headers: {entry:?}");
        };
        let sent_as = |header: &str| {
            headers
                .get_all(header)
                .iter()
                .any(|v| v.as_bytes() == value.as_bytes())
        };
        assert!(
            sent_as(&format!("grpc-metadata-{}", key.as_str()))
                || (key.as_str() == "authorization" && sent_as("authorization")),
            "metadata {key:?}: {value:?} from no header"
        );
    }
});

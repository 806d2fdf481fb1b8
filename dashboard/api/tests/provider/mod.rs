//! A real OpenID provider on loopback for the sign-in tests: a discovery
//! document, a JWKS, an authorization endpoint that signs "the person" in
//! at once, and a token endpoint that checks the client, the redirect and
//! the PKCE verifier before it returns an RS256-signed ID token.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::process::Command;
use std::sync::{Arc, Mutex};

use axum::extract::{Form, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use openidconnect::core::{
    CoreIdToken, CoreIdTokenClaims, CoreJsonWebKeySet, CoreJwsSigningAlgorithm,
    CoreRsaPrivateSigningKey,
};
use openidconnect::{
    Audience, EmptyAdditionalClaims, EndUserEmail, IssuerUrl, JsonWebKeyId, Nonce,
    PrivateSigningKey as _, StandardClaims, SubjectIdentifier,
};
use serde::Deserialize;
use sha2::{Digest as _, Sha256};

pub const CLIENT_ID: &str = "dashboard-test-client";
pub const CLIENT_SECRET: &str = "dashboard-test-client-secret";

/// What the provider does with the next sign-in.
#[derive(Clone)]
pub struct Behaviour {
    pub email: String,
    pub email_verified: bool,
    /// Sign the ID token with a key that is not in the JWKS.
    pub rogue_key: bool,
}

struct Pending {
    challenge: String,
    method: String,
    nonce: String,
    redirect_uri: String,
}

struct Inner {
    issuer: String,
    key: CoreRsaPrivateSigningKey,
    rogue: CoreRsaPrivateSigningKey,
    behaviour: Mutex<Behaviour>,
    pending: Mutex<HashMap<String, Pending>>,
    /// PKCE verifications that passed, for the tests to see.
    pub verified_pkce: Mutex<u32>,
}

/// A provider serving on loopback until the test ends.
#[derive(Clone)]
pub struct Provider(Arc<Inner>);

/// A fresh 2048-bit RSA key, PKCS#1 PEM (what openidconnect reads).
fn rsa_pem() -> String {
    let out = Command::new("openssl")
        .args(["genrsa", "-traditional", "2048"])
        .output()
        .expect("openssl runs (scripts/install-test-packages.sh installs it)");
    assert!(out.status.success(), "openssl genrsa failed");
    String::from_utf8(out.stdout).expect("PEM is text")
}

impl Provider {
    /// Starts on a free loopback port.
    pub async fn start() -> Provider {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr: SocketAddr = listener.local_addr().expect("addr");
        let key =
            CoreRsaPrivateSigningKey::from_pem(&rsa_pem(), Some(JsonWebKeyId::new("k1".into())))
                .expect("signing key");
        let rogue =
            CoreRsaPrivateSigningKey::from_pem(&rsa_pem(), Some(JsonWebKeyId::new("k1".into())))
                .expect("rogue key");
        let provider = Provider(Arc::new(Inner {
            issuer: format!("http://{addr}"),
            key,
            rogue,
            behaviour: Mutex::new(Behaviour {
                email: "ada@example.com".into(),
                email_verified: true,
                rogue_key: false,
            }),
            pending: Mutex::new(HashMap::new()),
            verified_pkce: Mutex::new(0),
        }));
        let app = Router::new()
            .route("/.well-known/openid-configuration", get(discovery))
            .route("/jwks", get(jwks))
            .route("/authorize", get(authorize))
            .route("/token", post(token))
            .with_state(provider.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        provider
    }

    pub fn issuer(&self) -> String {
        self.0.issuer.clone()
    }

    pub fn behave(&self, behaviour: Behaviour) {
        *self.0.behaviour.lock().unwrap() = behaviour;
    }

    pub fn verified_pkce(&self) -> u32 {
        *self.0.verified_pkce.lock().unwrap()
    }
}

async fn discovery(State(p): State<Provider>) -> Json<serde_json::Value> {
    let issuer = &p.0.issuer;
    Json(serde_json::json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "jwks_uri": format!("{issuer}/jwks"),
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "code_challenge_methods_supported": ["S256"],
        "scopes_supported": ["openid", "email"],
    }))
}

async fn jwks(State(p): State<Provider>) -> Json<CoreJsonWebKeySet> {
    Json(CoreJsonWebKeySet::new(vec![p.0.key.as_verification_key()]))
}

#[derive(Deserialize)]
struct AuthorizeQuery {
    client_id: String,
    redirect_uri: String,
    response_type: String,
    scope: String,
    state: String,
    nonce: String,
    code_challenge: String,
    code_challenge_method: String,
}

/// Signs the person in at once and sends the browser back with a code.
async fn authorize(State(p): State<Provider>, Query(q): Query<AuthorizeQuery>) -> Response {
    if q.client_id != CLIENT_ID || q.response_type != "code" || !q.scope.contains("openid") {
        return (StatusCode::BAD_REQUEST, "bad authorization request").into_response();
    }
    let code = format!("code-{}", rand_hex());
    p.0.pending.lock().unwrap().insert(
        code.clone(),
        Pending {
            challenge: q.code_challenge,
            method: q.code_challenge_method,
            nonce: q.nonce,
            redirect_uri: q.redirect_uri.clone(),
        },
    );
    let mut back = url::Url::parse(&q.redirect_uri).expect("redirect URI");
    back.query_pairs_mut()
        .append_pair("code", &code)
        .append_pair("state", &q.state);
    (
        StatusCode::SEE_OTHER,
        [(header::LOCATION, back.to_string())],
    )
        .into_response()
}

#[derive(Deserialize)]
struct TokenForm {
    grant_type: String,
    code: String,
    redirect_uri: String,
    code_verifier: Option<String>,
}

/// The code exchange: client authentication, redirect, PKCE, then an
/// RS256-signed ID token.
async fn token(
    State(p): State<Provider>,
    headers: HeaderMap,
    Form(form): Form<TokenForm>,
) -> Response {
    let expected = format!(
        "Basic {}",
        STANDARD.encode(format!("{CLIENT_ID}:{CLIENT_SECRET}"))
    );
    if headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        != Some(expected.as_str())
    {
        return error("invalid_client");
    }
    let Some(pending) = p.0.pending.lock().unwrap().remove(&form.code) else {
        return error("invalid_grant");
    };
    if form.grant_type != "authorization_code" || form.redirect_uri != pending.redirect_uri {
        return error("invalid_grant");
    }
    let verifier = form.code_verifier.unwrap_or_default();
    let computed = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    if pending.method != "S256" || computed != pending.challenge {
        return error("invalid_grant");
    }
    *p.0.verified_pkce.lock().unwrap() += 1;
    let behaviour = p.0.behaviour.lock().unwrap().clone();
    let now = chrono::Utc::now();
    let claims = CoreIdTokenClaims::new(
        IssuerUrl::new(p.0.issuer.clone()).expect("issuer"),
        vec![Audience::new(CLIENT_ID.into())],
        now + chrono::Duration::minutes(5),
        now,
        StandardClaims::new(SubjectIdentifier::new(format!("sub-{}", behaviour.email)))
            .set_email(Some(EndUserEmail::new(behaviour.email.clone())))
            .set_email_verified(Some(behaviour.email_verified)),
        EmptyAdditionalClaims {},
    )
    .set_nonce(Some(Nonce::new(pending.nonce)));
    let key = if behaviour.rogue_key {
        &p.0.rogue
    } else {
        &p.0.key
    };
    let id_token = CoreIdToken::new(
        claims,
        key,
        CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256,
        None,
        None,
    )
    .expect("sign the ID token");
    Json(serde_json::json!({
        "access_token": format!("at-{}", rand_hex()),
        "token_type": "Bearer",
        "expires_in": 300,
        "id_token": id_token.to_string(),
    }))
    .into_response()
}

fn error(code: &str) -> Response {
    (
        StatusCode::BAD_REQUEST,
        Json(serde_json::json!({ "error": code })),
    )
        .into_response()
}

fn rand_hex() -> String {
    use rand::RngCore as _;
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

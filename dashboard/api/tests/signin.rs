//! Sign-in and sessions against a real OpenID provider on loopback: the
//! authorization code flow with PKCE, ID tokens verified against the
//! provider's JWKS, allowed domains, signed cookies, CSRF and the
//! development sign-in.

mod provider;

use std::collections::HashMap;

use levers9_dashboard_api::config::Config;
use levers9_dashboard_api::session::{unix_now, CookieKey, Session, SESSION_COOKIE, SIGNIN_COOKIE};
use provider::{Behaviour, Provider, CLIENT_ID, CLIENT_SECRET};
use reqwest::header::{COOKIE, LOCATION, ORIGIN, SET_COOKIE};
use reqwest::StatusCode;

const SECRET: &str = "a-test-session-secret-of-at-least-32-bytes";
const WEB: &str = "http://127.0.0.1:3999";

/// The API in-process on a free port; its base URL (`.../api`).
async fn api(extra: &[(&str, String)]) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}/api", listener.local_addr().expect("addr"));
    let mut vars: HashMap<String, String> = HashMap::from([
        ("LEVERS9_TOKEN".into(), "unused-in-these-tests".into()),
        // Nothing listens there: these tests never reach the controlplane.
        ("LEVERS9_CONTROLPLANE_HOST".into(), "127.0.0.1".into()),
        ("LEVERS9_CONTROLPLANE_PORT".into(), "9".into()),
        ("LEVERS9_DASHBOARD_URL".into(), WEB.into()),
        ("LEVERS9_DASHBOARD_API_URL".into(), base.clone()),
        ("LEVERS9_DASHBOARD_SESSION_SECRET".into(), SECRET.into()),
    ]);
    for (k, v) in extra {
        vars.insert((*k).into(), v.clone());
    }
    let config = Config::from_lookup(|name| vars.get(name).cloned()).expect("valid config");
    tokio::spawn(levers9_dashboard_api::serve(config, listener));
    base
}

async fn google_api(provider: &Provider) -> String {
    api(&[
        ("LEVERS9_DASHBOARD_OIDC_ISSUER", provider.issuer()),
        ("LEVERS9_DASHBOARD_GOOGLE_CLIENT_ID", CLIENT_ID.into()),
        (
            "LEVERS9_DASHBOARD_GOOGLE_CLIENT_SECRET",
            CLIENT_SECRET.into(),
        ),
        (
            "LEVERS9_DASHBOARD_ALLOWED_DOMAINS",
            "example.com, levers9.dev".into(),
        ),
    ])
    .await
}

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

/// The value `Set-Cookie` gives cookie `name`, with its attributes.
fn set_cookie(response: &reqwest::Response, name: &str) -> Option<String> {
    response
        .headers()
        .get_all(SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|c| c.starts_with(&format!("{name}=")))
        .map(str::to_owned)
}

fn cookie_value(set_cookie: &str) -> String {
    let pair = set_cookie.split(';').next().expect("a pair");
    pair.split_once('=').expect("name=value").1.to_owned()
}

fn location(response: &reqwest::Response) -> String {
    response
        .headers()
        .get(LOCATION)
        .expect("a redirect")
        .to_str()
        .expect("text")
        .to_owned()
}

/// Goes through the whole browser dance; the callback's response.
async fn sign_in_with_google(base: &str) -> reqwest::Response {
    let http = http();
    let start = http
        .get(format!("{base}/auth/login"))
        .send()
        .await
        .expect("login");
    assert_eq!(start.status(), StatusCode::SEE_OTHER);
    let signin = set_cookie(&start, SIGNIN_COOKIE).expect("the sign-in cookie");
    assert!(
        signin.contains("HttpOnly") && signin.contains("SameSite=Lax"),
        "{signin}"
    );
    let authorize = location(&start);
    assert!(
        authorize.contains("code_challenge_method=S256"),
        "{authorize}"
    );
    assert!(authorize.contains("nonce="), "{authorize}");
    let at_provider = http.get(&authorize).send().await.expect("authorize");
    assert_eq!(
        at_provider.status(),
        StatusCode::SEE_OTHER,
        "{:?}",
        at_provider.text().await
    );
    let callback = location(&at_provider);
    assert!(
        callback.starts_with(&format!("{base}/auth/callback?")),
        "{callback}"
    );
    http.get(&callback)
        .header(COOKIE, format!("{SIGNIN_COOKIE}={}", cookie_value(&signin)))
        .send()
        .await
        .expect("callback")
}

async fn session_status(base: &str, cookie: &str) -> StatusCode {
    http()
        .get(format!("{base}/session"))
        .header(COOKIE, format!("{SESSION_COOKIE}={cookie}"))
        .send()
        .await
        .expect("session")
        .status()
}

#[tokio::test]
async fn google_sign_in_with_pkce_makes_a_session() {
    let provider = Provider::start().await;
    let base = google_api(&provider).await;
    let done = sign_in_with_google(&base).await;
    assert_eq!(done.status(), StatusCode::SEE_OTHER);
    assert_eq!(location(&done), format!("{WEB}/"));
    let session = set_cookie(&done, SESSION_COOKIE).expect("a session cookie");
    assert!(session.contains("HttpOnly"), "{session}");
    assert!(session.contains("SameSite=Lax"), "{session}");
    // A local http API: Secure would make the browser drop it.
    assert!(!session.contains("Secure"), "{session}");
    assert_eq!(
        provider.verified_pkce(),
        1,
        "the provider checked the PKCE verifier"
    );
    let me: serde_json::Value = http()
        .get(format!("{base}/session"))
        .header(
            COOKIE,
            format!("{SESSION_COOKIE}={}", cookie_value(&session)),
        )
        .send()
        .await
        .expect("session")
        .json()
        .await
        .expect("json");
    assert_eq!(me["email"], "ada@example.com");
    assert_eq!(me["method"], "google");
    assert!(
        me["csrfToken"].as_str().is_some_and(|t| t.len() > 20),
        "{me}"
    );
}

/// Signs in as the provider is told to; asserts there is no session and
/// returns where the browser was sent instead.
async fn refused_sign_in(email: &str, email_verified: bool, rogue_key: bool) -> String {
    let provider = Provider::start().await;
    provider.behave(Behaviour {
        email: email.into(),
        email_verified,
        rogue_key,
    });
    let base = google_api(&provider).await;
    let done = sign_in_with_google(&base).await;
    assert_eq!(done.status(), StatusCode::SEE_OTHER);
    assert!(
        set_cookie(&done, SESSION_COOKIE).is_none(),
        "no session for a refused sign-in"
    );
    let to = location(&done);
    assert!(to.starts_with(&format!("{WEB}/signin?error=")), "{to}");
    to
}

#[tokio::test]
async fn a_disallowed_domain_is_refused() {
    let to = refused_sign_in("mallory@elsewhere.org", true, false).await;
    assert!(
        to.contains("elsewhere.org") && to.contains("example.com"),
        "{to}"
    );
}

#[tokio::test]
async fn an_unverified_email_is_refused() {
    let to = refused_sign_in("ada@example.com", false, false).await;
    assert!(to.contains("not+verified"), "{to}");
}

#[tokio::test]
async fn an_id_token_signed_by_a_key_outside_the_jwks_is_refused() {
    let to = refused_sign_in("ada@example.com", true, true).await;
    assert!(to.contains("ID+token"), "{to}");
}

#[tokio::test]
async fn a_callback_without_the_browsers_sign_in_cookie_is_refused() {
    let provider = Provider::start().await;
    let base = google_api(&provider).await;
    let http = http();
    let start = http
        .get(format!("{base}/auth/login"))
        .send()
        .await
        .expect("login");
    let at_provider = http.get(location(&start)).send().await.expect("authorize");
    // An attacker's code and state, replayed in a victim's browser that
    // never started a sign-in.
    let done = http
        .get(location(&at_provider))
        .send()
        .await
        .expect("callback");
    assert!(set_cookie(&done, SESSION_COOKIE).is_none());
    assert!(
        location(&done).contains("did+not+start"),
        "{}",
        location(&done)
    );
}

#[tokio::test]
async fn tampered_or_expired_session_cookies_are_refused() {
    let base = api(&[]).await;
    let key = CookieKey::new(SECRET.as_bytes());
    let good = key.seal(&Session::new("ada@example.com", "dev"));
    assert_eq!(session_status(&base, &good).await, StatusCode::OK);

    // Same signature, another email in the payload.
    let (_, tag) = good.split_once('.').expect("signed");
    let forged_payload = {
        use base64::Engine as _;
        let mut s = Session::new("root@example.com", "dev");
        s.expires_at = unix_now() + 3600;
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(serde_json::to_vec(&s).expect("json"))
    };
    let tampered = format!("{forged_payload}.{tag}");
    assert_eq!(
        session_status(&base, &tampered).await,
        StatusCode::UNAUTHORIZED
    );

    let mut old = Session::new("ada@example.com", "dev");
    old.expires_at = unix_now() - 1;
    let expired = key.seal(&old);
    assert_eq!(
        session_status(&base, &expired).await,
        StatusCode::UNAUTHORIZED
    );

    let other_key = CookieKey::new(b"another-secret-also-32-bytes-long!!");
    let foreign = other_key.seal(&Session::new("ada@example.com", "dev"));
    assert_eq!(
        session_status(&base, &foreign).await,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn state_changing_calls_without_the_csrf_token_are_refused() {
    let base = api(&[]).await;
    let session = Session::new("ada@example.com", "dev");
    let cookie = format!(
        "{SESSION_COOKIE}={}",
        CookieKey::new(SECRET.as_bytes()).seal(&session)
    );
    let http = http();
    for (path, body) in [
        ("/auth/logout", "{}"),
        ("/tokens", r#"{"description":"x"}"#),
        ("/tasks/t1/cancel", "{}"),
    ] {
        for token in [None, Some("not-the-token")] {
            let mut request = http
                .post(format!("{base}{path}"))
                .header(COOKIE, &cookie)
                .header("content-type", "application/json")
                .body(body);
            if let Some(token) = token {
                request = request.header("x-csrf-token", token);
            }
            let refused = request.send().await.expect("post");
            assert_eq!(
                refused.status(),
                StatusCode::FORBIDDEN,
                "{path}, token {token:?}"
            );
            let error: serde_json::Value = refused.json().await.expect("json");
            assert!(
                error["error"].as_str().unwrap_or_default().contains("CSRF"),
                "{error}"
            );
        }
    }
    // Another site's page, even with the right token, is refused by origin.
    let cross = http
        .post(format!("{base}/auth/logout"))
        .header(COOKIE, &cookie)
        .header("x-csrf-token", &session.csrf)
        .header(ORIGIN, "http://evil.example")
        .send()
        .await
        .expect("post");
    assert_eq!(cross.status(), StatusCode::FORBIDDEN);
    let right = http
        .post(format!("{base}/auth/logout"))
        .header(COOKIE, &cookie)
        .header("x-csrf-token", &session.csrf)
        .header(ORIGIN, WEB)
        .send()
        .await
        .expect("post");
    assert_eq!(right.status(), StatusCode::NO_CONTENT);
    let cleared = set_cookie(&right, SESSION_COOKIE).expect("cleared");
    assert!(cleared.contains("Max-Age=0"), "{cleared}");
}

#[tokio::test]
async fn the_development_sign_in_is_refused_when_off() {
    let base = api(&[]).await;
    let response = http()
        .post(format!("{base}/auth/dev"))
        .header(ORIGIN, WEB)
        .json(&serde_json::json!({ "email": "ada@example.com" }))
        .send()
        .await
        .expect("post");
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert!(set_cookie(&response, SESSION_COOKIE).is_none());
    let error: serde_json::Value = response.json().await.expect("json");
    assert!(
        error["error"]
            .as_str()
            .unwrap_or_default()
            .contains("LEVERS9_DASHBOARD_DEV_SIGNIN"),
        "{error}"
    );
}

#[tokio::test]
async fn the_development_sign_in_takes_any_email_from_the_dashboard_only() {
    let base = api(&[("LEVERS9_DASHBOARD_DEV_SIGNIN", "true".into())]).await;
    let http = http();
    let no_origin = http
        .post(format!("{base}/auth/dev"))
        .json(&serde_json::json!({ "email": "ada@anywhere.org" }))
        .send()
        .await
        .expect("post");
    assert_eq!(no_origin.status(), StatusCode::FORBIDDEN);
    let ok = http
        .post(format!("{base}/auth/dev"))
        .header(ORIGIN, WEB)
        .json(&serde_json::json!({ "email": "ada@anywhere.org" }))
        .send()
        .await
        .expect("post");
    assert_eq!(ok.status(), StatusCode::OK);
    assert_eq!(
        ok.headers()["access-control-allow-origin"],
        WEB,
        "CORS for the web app's origin"
    );
    let cookie = set_cookie(&ok, SESSION_COOKIE).expect("session");
    assert_eq!(
        session_status(&base, &cookie_value(&cookie)).await,
        StatusCode::OK
    );
    let me: serde_json::Value = ok.json().await.expect("json");
    assert_eq!(me["method"], "dev");
    assert_eq!(me["devSignIn"], true);
}

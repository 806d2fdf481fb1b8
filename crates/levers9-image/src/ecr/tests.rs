use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;
use crate::credentials::RegistryKeychain;

const HOST: &str = "123456789012.dkr.ecr.eu-west-1.amazonaws.com";
const HOUR: Duration = Duration::from_secs(3600);

fn b64(s: &str) -> String {
    STANDARD.encode(s)
}

struct FakeClock(Mutex<SystemTime>);

impl FakeClock {
    fn advance(&self, by: Duration) {
        *self.0.lock().unwrap() += by;
    }
}

impl Clock for FakeClock {
    fn now(&self) -> SystemTime {
        *self.0.lock().unwrap()
    }
}

/// Hands out `AWS:password-N` tokens valid for `lifetime` from the fake
/// clock's now, or fails while `failing`.
struct FakeSource {
    clock: Arc<FakeClock>,
    lifetime: Duration,
    calls: AtomicU64,
    failing: Mutex<bool>,
}

impl TokenSource for FakeSource {
    fn fetch<'a>(&'a self, region: &'a str) -> BoxFuture<'a, Result<EcrToken, String>> {
        Box::pin(async move {
            assert_eq!(region, "eu-west-1");
            let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
            if *self.failing.lock().unwrap() {
                return Err("ECR is down".into());
            }
            EcrToken::parse(
                &b64(&format!("AWS:password-{n}")),
                self.clock.now() + self.lifetime,
            )
        })
    }
}

fn fake(lifetime: Duration) -> (EcrTokens, Arc<FakeClock>, Arc<FakeSource>) {
    let clock = Arc::new(FakeClock(Mutex::new(
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000),
    )));
    let source = Arc::new(FakeSource {
        clock: clock.clone(),
        lifetime,
        calls: AtomicU64::new(0),
        failing: Mutex::new(false),
    });
    (EcrTokens::new(source.clone(), clock.clone()), clock, source)
}

fn password(c: RegistryCredentials) -> String {
    match c {
        RegistryCredentials::Basic { username, password } => {
            assert_eq!(username, "AWS");
            password
        }
        other => panic!("expected basic credentials, got {other:?}"),
    }
}

#[test]
fn ecr_hosts_and_their_regions_are_recognised() {
    assert_eq!(ecr_region(HOST).as_deref(), Some("eu-west-1"));
    assert_eq!(
        ecr_region("123456789012.dkr.ecr-fips.us-east-1.amazonaws.com").as_deref(),
        Some("us-east-1")
    );
    assert_eq!(
        ecr_region("123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn").as_deref(),
        Some("cn-north-1")
    );
    assert_eq!(ecr_region("public.ecr.aws"), None);
    assert_eq!(ecr_region("12345.dkr.ecr.eu-west-1.amazonaws.com"), None);
    assert_eq!(ecr_region("ghcr.io"), None);
}

#[test]
fn tokens_parse_into_basic_credentials_and_bad_ones_are_refused_quietly() {
    let at = SystemTime::UNIX_EPOCH;
    let token = EcrToken::parse(&b64("AWS:pw"), at).unwrap();
    assert_eq!(password(token.credentials), "pw");
    for bad in ["%%%secretish", &b64("secretish"), &b64("AWS:")] {
        let error = EcrToken::parse(bad, at).unwrap_err();
        assert!(!error.contains("secretish"), "{error}");
    }
}

#[tokio::test]
async fn a_token_is_reused_then_refreshed_an_hour_before_it_expires() {
    let (tokens, clock, source) = fake(12 * HOUR);
    assert_eq!(
        password(tokens.credentials(HOST).await.unwrap()),
        "password-1"
    );
    clock.advance(10 * HOUR);
    assert_eq!(
        password(tokens.credentials(HOST).await.unwrap()),
        "password-1"
    );
    assert_eq!(source.calls.load(Ordering::SeqCst), 1);
    // 11 h in: an hour before expiry, a new token.
    clock.advance(HOUR);
    assert_eq!(
        password(tokens.credentials(HOST).await.unwrap()),
        "password-2"
    );
    assert_eq!(source.calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn short_lived_tokens_are_refreshed_after_three_quarters_of_their_life() {
    let (tokens, clock, _) = fake(Duration::from_secs(400));
    assert_eq!(
        password(tokens.credentials(HOST).await.unwrap()),
        "password-1"
    );
    clock.advance(Duration::from_secs(299));
    assert_eq!(
        password(tokens.credentials(HOST).await.unwrap()),
        "password-1"
    );
    clock.advance(Duration::from_secs(1));
    assert_eq!(
        password(tokens.credentials(HOST).await.unwrap()),
        "password-2"
    );
}

#[tokio::test]
async fn a_failed_refresh_keeps_the_valid_token_and_waits_before_asking_again() {
    let (tokens, clock, source) = fake(12 * HOUR);
    tokens.credentials(HOST).await.unwrap();
    *source.failing.lock().unwrap() = true;
    clock.advance(11 * HOUR);
    assert_eq!(
        password(tokens.credentials(HOST).await.unwrap()),
        "password-1"
    );
    assert_eq!(source.calls.load(Ordering::SeqCst), 2);
    // Within the minute after a failure ECR is not asked again.
    clock.advance(Duration::from_secs(30));
    assert_eq!(
        password(tokens.credentials(HOST).await.unwrap()),
        "password-1"
    );
    assert_eq!(source.calls.load(Ordering::SeqCst), 2);
    clock.advance(Duration::from_secs(31));
    tokens.credentials(HOST).await.unwrap();
    assert_eq!(source.calls.load(Ordering::SeqCst), 3);
    // A token within a minute of its expiry is never handed out.
    clock.advance(HOUR - Duration::from_secs(61 + 30));
    let error = tokens.credentials(HOST).await.unwrap_err().to_string();
    assert_eq!(
        error,
        format!("cannot get a token for ECR registry {HOST}: ECR is down")
    );
    *source.failing.lock().unwrap() = false;
    let fresh = password(tokens.credentials(HOST).await.unwrap());
    assert!(fresh.starts_with("password-"), "{fresh}");
}

#[tokio::test]
async fn ecr_hosts_without_an_entry_get_ecr_tokens_from_the_keychain() {
    let (tokens, _, _) = fake(12 * HOUR);
    let keychain = RegistryKeychain::default().with_ecr(tokens);
    assert_eq!(
        password(keychain.credentials_for(HOST).await.unwrap()),
        "password-1"
    );
    assert_eq!(
        keychain.credentials_for("ghcr.io").await.unwrap(),
        RegistryCredentials::Anonymous
    );
}

/// A stand-in for the ECR API on a loopback port: answers one
/// GetAuthorizationToken (awsJson1_1) and returns what it was sent.
async fn stand_in_ecr(body: String) -> (String, tokio::task::JoinHandle<String>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let served = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut request = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let n = socket.read(&mut buf).await.unwrap();
            request.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&request).to_string();
            if let Some(end) = text.find("\r\n\r\n") {
                let length: usize = text
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().parse().unwrap())
                    })
                    .unwrap_or(0);
                if request.len() >= end + 4 + length {
                    break;
                }
            }
            assert!(n > 0, "the client hung up");
        }
        let response = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/x-amz-json-1.1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        socket.write_all(response.as_bytes()).await.unwrap();
        socket.shutdown().await.unwrap();
        String::from_utf8_lossy(&request).to_string()
    });
    (url, served)
}

#[tokio::test]
async fn the_sdk_source_signs_get_authorization_token_and_reads_the_answer() {
    let expires = 1_900_000_000u64;
    let body = serde_json::json!({"authorizationData": [{
        "authorizationToken": b64("AWS:ecr-password"),
        "expiresAt": expires,
        "proxyEndpoint": format!("https://{HOST}"),
    }]})
    .to_string();
    let (url, served) = stand_in_ecr(body).await;
    let source = SdkTokenSource::with_endpoint(
        url,
        aws_sdk_ecr::config::Credentials::new("AKIDTEST", "secret-key", None, None, "test"),
    );
    let token = source.fetch("eu-west-1").await.unwrap();
    assert_eq!(password(token.credentials), "ecr-password");
    assert_eq!(
        token.expires_at,
        SystemTime::UNIX_EPOCH + Duration::from_secs(expires)
    );
    let request = served.await.unwrap().to_ascii_lowercase();
    assert!(request.starts_with("post / http/1.1"), "{request}");
    assert!(
        request
            .contains("x-amz-target: amazonec2containerregistry_v20150921.getauthorizationtoken"),
        "{request}"
    );
    assert!(
        request.contains("authorization: aws4-hmac-sha256 credential=akidtest/")
            && request.contains("/eu-west-1/ecr/aws4_request"),
        "{request}"
    );
}

#[tokio::test]
async fn an_ecr_refusal_is_reported_with_its_reason() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 8192];
            let _ = socket.read(&mut buf).await;
            let body = r#"{"__type":"AccessDeniedException","message":"not authorized to perform ecr:GetAuthorizationToken"}"#;
            let response = format!(
                "HTTP/1.1 400 Bad Request\r\nContent-Type: application/x-amz-json-1.1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = socket.write_all(response.as_bytes()).await;
        }
    });
    let source = SdkTokenSource::with_endpoint(
        url,
        aws_sdk_ecr::config::Credentials::new("AKIDTEST", "secret-key", None, None, "test"),
    );
    let tokens = EcrTokens::new(Arc::new(source), Arc::new(SystemClock));
    let error = tokens.credentials(HOST).await.unwrap_err().to_string();
    assert!(error.contains("AccessDeniedException"), "{error}");
    assert!(!error.contains("secret-key"), "{error}");
}

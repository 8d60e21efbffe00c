//! The model's web fetch: a page read over HTTP(S) as readable text, never from an address
//! only the server can reach, never against a site's `robots.txt`, within the project's
//! domains unless a person approved the URL.
//!
//! Every connection goes through [`CheckedResolver`]: a name's addresses are checked
//! (`rummy_core::web::address`) and only those that pass are handed to the connector, so the
//! address checked is the address connected to; a URL naming an address is checked before
//! the request. Redirects are followed here, hop by hop (at most [`MAX_REDIRECTS`]), each
//! checked as the first: scheme, address, domain, robots. The whole fetch — robots, redirects,
//! the body — is bounded by `RUMMY_WEB_TIMEOUT`, and the body by `RUMMY_WEB_MAX_BYTES`.

use futures_util::StreamExt;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::header::{CONTENT_TYPE, LOCATION};
use reqwest::{StatusCode, Url};
use rummy_core::config::WebSettings;
use rummy_core::web::address::{self, AllowList};
use rummy_core::web::domains;
use rummy_text::web::html;
use rummy_text::web::robots::Robots;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Redirects followed before a fetch gives up.
pub const MAX_REDIRECTS: usize = 5;

/// How long a site's `robots.txt` is trusted before it is read again.
const ROBOTS_FOR: Duration = Duration::from_secs(600);

/// Bytes of a `robots.txt` read (Google reads 500 KiB).
const ROBOTS_BYTES: usize = 512 * 1024;

/// The product token `robots.txt` rules name.
pub const AGENT: &str = "rummy";

/// Why a page was not fetched, as the model reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchError {
    /// A rule kept the fetch from it (an address, the domains, robots.txt, not a page): 403.
    Refused(String),
    /// The site did not answer with the page (unreachable, an error status, too slow): 502.
    Failed(String),
}

impl FetchError {
    /// The reason.
    pub fn message(&self) -> &str {
        match self {
            FetchError::Refused(m) | FetchError::Failed(m) => m,
        }
    }

    /// The outcome of the command that asked for the page.
    pub fn kind(&self) -> rummy_store::entry::FailureKind {
        match self {
            FetchError::Refused(_) => rummy_store::entry::FailureKind::Permission,
            FetchError::Failed(_) => rummy_store::entry::FailureKind::Status { code: 502 },
        }
    }
}

/// A page fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// Where it was read from, after redirects.
    pub url: String,
    /// Its readable text.
    pub text: String,
    /// Its content type.
    pub content_type: String,
    /// Whether it was cut at `RUMMY_WEB_MAX_BYTES`.
    pub truncated: bool,
}

/// What the fetch may reach beyond its safety rules: the project's domains, and the host of a
/// URL a person approved (its redirects may stay on that host).
#[derive(Debug, Clone, Default)]
pub struct Reach {
    /// The domains fetched from without asking.
    pub domains: Vec<String>,
    /// The host a person approved, if any.
    pub approved_host: Option<String>,
}

impl Reach {
    fn allows(&self, host: &str) -> bool {
        domains::allows(&self.domains, host)
            || self
                .approved_host
                .as_deref()
                .is_some_and(|approved| approved.eq_ignore_ascii_case(host))
    }
}

/// Resolves names to the addresses a fetch may reach: refused ones are dropped, and a name
/// left with none fails, naming why. Names the settings fix (tests) skip DNS.
struct CheckedResolver {
    allow: AllowList,
    fixed: Vec<(String, IpAddr)>,
}

impl Resolve for CheckedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_ascii_lowercase();
        let allow = self.allow.clone();
        let fixed: Vec<IpAddr> = self
            .fixed
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(&host))
            .map(|(_, ip)| *ip)
            .collect();
        Box::pin(async move {
            let found: Vec<IpAddr> = if fixed.is_empty() {
                tokio::net::lookup_host((host.as_str(), 0))
                    .await?
                    .map(|a| a.ip())
                    .collect()
            } else {
                fixed
            };
            let mut refused = None;
            let mut kept = Vec::new();
            for ip in found {
                match address::check(ip, &allow) {
                    Ok(()) => kept.push(SocketAddr::new(ip, 0)),
                    Err(why) => refused = Some(why),
                }
            }
            if kept.is_empty() {
                let why = refused.unwrap_or_else(|| "it has no address".to_owned());
                return Err(format!("{host} {REFUSED} {why}").into());
            }
            Ok(Box::new(kept.into_iter()) as Addrs)
        })
    }
}

/// The server's web fetcher (present when `RUMMY_WEB_FETCH` is on).
#[derive(Clone)]
pub struct WebFetcher {
    http: reqwest::Client,
    allow: AllowList,
    timeout: Duration,
    max_bytes: usize,
    robots: Arc<Mutex<HashMap<String, (Instant, Robots)>>>,
}

impl WebFetcher {
    /// The fetcher for these settings, `None` when fetch is off.
    pub fn from_settings(
        settings: &WebSettings,
    ) -> Result<Option<WebFetcher>, crate::errors::HttpClientError> {
        if !settings.fetch {
            return Ok(None);
        }
        let resolver = CheckedResolver {
            allow: settings.allow_private.clone(),
            fixed: settings.resolve.clone(),
        };
        let agent = format!(
            "{AGENT}/{} (an AI agent server fetching a page its model asked for)",
            env!("CARGO_PKG_VERSION")
        );
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .dns_resolver(Arc::new(resolver))
            .user_agent(agent)
            .build()?;
        Ok(Some(WebFetcher {
            http,
            allow: settings.allow_private.clone(),
            timeout: Duration::from_millis(settings.timeout_ms),
            max_bytes: settings.max_bytes,
            robots: Arc::default(),
        }))
    }

    /// Fetches `url` within `reach`: the page's readable text, or why not, as the model reads it.
    pub async fn fetch(&self, url: &str, reach: &Reach) -> Result<Page, FetchError> {
        let seconds = self.timeout.as_secs_f64();
        match tokio::time::timeout(self.timeout, self.follow(url, reach)).await {
            Ok(fetched) => fetched,
            Err(_) => Err(FetchError::Failed(format!(
                "{url} was not fetched: no answer within {seconds} s"
            ))),
        }
    }

    async fn follow(&self, url: &str, reach: &Reach) -> Result<Page, FetchError> {
        let mut url =
            Url::parse(url).map_err(|e| FetchError::Refused(format!("{url} is not a URL: {e}")))?;
        for hop in 0..=MAX_REDIRECTS {
            self.check(&url, reach).map_err(FetchError::Refused)?;
            self.check_robots(&url).await.map_err(FetchError::Refused)?;
            let response = self
                .http
                .get(url.clone())
                .header(
                    reqwest::header::ACCEPT,
                    "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.1",
                )
                .send()
                .await
                .map_err(|e| failure(&url, &e))?;
            let status = response.status();
            if status.is_redirection() {
                let location = response
                    .headers()
                    .get(LOCATION)
                    .and_then(|l| l.to_str().ok())
                    .ok_or_else(|| {
                        FetchError::Failed(format!(
                            "{url} redirects nowhere (HTTP {})",
                            status.as_u16()
                        ))
                    })?;
                let next = url.join(location).map_err(|e| {
                    FetchError::Failed(format!(
                        "{url} redirects to {location}, which is no URL: {e}"
                    ))
                })?;
                if hop == MAX_REDIRECTS {
                    break;
                }
                url = next;
                continue;
            }
            if !status.is_success() {
                return Err(FetchError::Failed(format!(
                    "{url} answered HTTP {}",
                    status.as_u16()
                )));
            }
            return self.read(url, response).await;
        }
        Err(FetchError::Failed(format!(
            "{url} was not fetched: more than {MAX_REDIRECTS} redirects"
        )))
    }

    /// The rules every hop passes before a connection: http(s), a host, an address a fetch may
    /// reach when the URL names one, and a host within the reach.
    fn check(&self, url: &Url, reach: &Reach) -> Result<(), String> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!(
                "{url} is not fetched: only http and https pages are"
            ));
        }
        let name = url
            .host_str()
            .ok_or_else(|| format!("{url} is not fetched: it names no host"))?
            .trim_matches(['[', ']']);
        if let Ok(ip) = name.parse::<IpAddr>() {
            address::check(ip, &self.allow)
                .map_err(|why| format!("{url} is not fetched: {why}"))?;
        }
        if !reach.allows(name) {
            return Err(format!(
                "{url} is not fetched: {name} is outside the domains this project fetches from without asking"
            ));
        }
        Ok(())
    }

    /// Refuses a URL its site's `robots.txt` keeps rummy from (read once per site for
    /// [`ROBOTS_FOR`]; one that cannot be read keeps nobody out).
    async fn check_robots(&self, url: &Url) -> Result<(), String> {
        let origin = url.origin().ascii_serialization();
        let cached = {
            let robots = self.robots.lock().unwrap_or_else(PoisonError::into_inner);
            robots
                .get(&origin)
                .filter(|(read, _)| read.elapsed() < ROBOTS_FOR)
                .map(|(_, rules)| rules.clone())
        };
        let rules = match cached {
            Some(rules) => rules,
            None => {
                let rules = self.read_robots(&origin).await;
                let mut robots = self.robots.lock().unwrap_or_else(PoisonError::into_inner);
                robots.insert(origin.clone(), (Instant::now(), rules.clone()));
                rules
            }
        };
        let path = match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_owned(),
        };
        if rules.allows(AGENT, &path) {
            Ok(())
        } else {
            Err(format!(
                "{url} is not fetched: the site's robots.txt keeps {AGENT} out of {path}"
            ))
        }
    }

    async fn read_robots(&self, origin: &str) -> Robots {
        let Ok(response) = self.http.get(format!("{origin}/robots.txt")).send().await else {
            return Robots::default();
        };
        if response.status() != StatusCode::OK {
            return Robots::default();
        }
        match read_capped(response, ROBOTS_BYTES).await {
            Ok((bytes, _)) => Robots::parse(&String::from_utf8_lossy(&bytes)),
            Err(_) => Robots::default(),
        }
    }

    /// The page's text: HTML reduced, other text as it is, anything else refused.
    async fn read(&self, url: Url, response: reqwest::Response) -> Result<Page, FetchError> {
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|c| c.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        let mime = content_type
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_owned();
        let html = matches!(mime.as_str(), "text/html" | "application/xhtml+xml");
        let text = mime.starts_with("text/")
            || mime.ends_with("+json")
            || mime.ends_with("+xml")
            || matches!(mime.as_str(), "application/json" | "application/xml" | "");
        if !html && !text {
            return Err(FetchError::Refused(format!(
                "{url} is not fetched: it is {mime}, not a page or text"
            )));
        }
        let (bytes, truncated) = read_capped(response, self.max_bytes)
            .await
            .map_err(|e| failure(&url, &e))?;
        let raw = String::from_utf8_lossy(&bytes);
        let text = if html {
            html::readable(&raw)
        } else {
            raw.into_owned()
        };
        Ok(Page {
            url: url.to_string(),
            text,
            content_type: mime,
            truncated,
        })
    }
}

/// At most `max` bytes of a body, and whether there was more.
async fn read_capped(
    response: reqwest::Response,
    max: usize,
) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        let room = max - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

/// A transport failure as the model reads it: the innermost cause; the resolver's refusal of
/// an address is a refusal.
fn failure(url: &Url, error: &reqwest::Error) -> FetchError {
    let mut cause: &dyn std::error::Error = error;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    let cause = cause.to_string();
    if cause.contains(REFUSED) {
        return FetchError::Refused(format!("{url} was not fetched: {cause}"));
    }
    if error.is_timeout() {
        return FetchError::Failed(format!("{url} was not fetched: it timed out"));
    }
    FetchError::Failed(format!("{url} was not fetched: {cause}"))
}

/// What the resolver's refusals say, by which a transport failure is told to be one.
const REFUSED: &str = "is not fetched:";

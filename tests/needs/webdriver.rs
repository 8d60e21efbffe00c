//! A small W3C WebDriver client over the reqwest already in the tree, driving the
//! distribution's headless Chromium through `chromedriver`. WebDriver is a handful of
//! JSON endpoints; a crate such as fantoccini would bring its own hyper and tokio stacks to build
//! on a 2-core machine for the dozen calls used here.
//!
//! Whether a browser is here is the harness's question (`parts::browser`).

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The key W3C WebDriver names an element reference with.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// How long a browser test waits for a condition: generous, for a loaded 2-core machine.
pub const BROWSER_WAIT: Duration = Duration::from_secs(45);

/// Where screenshots are kept: `target/browser-artifacts/`.
pub fn artifacts() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/browser-artifacts");
    std::fs::create_dir_all(&dir).expect("artifacts directory");
    dir
}

/// A running chromedriver with one headless Chromium session; both end when dropped.
pub struct Browser {
    http: reqwest::Client,
    base: String,
    session: String,
    driver: Child,
}

/// An element on the page.
#[derive(Clone)]
pub struct Element(String);

impl Browser {
    /// Starts chromedriver on a free loopback port and opens a session of `chromium`, headless,
    /// in a window of `width`×`height`.
    pub async fn start(chromium: &Path, driver: &Path, width: u32, height: u32) -> Browser {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new(driver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(120))
            .build()
            .expect("an HTTP client");
        let base = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + BROWSER_WAIT;
        loop {
            let ready = http.get(format!("{base}/status")).send().await;
            if let Ok(answer) = ready {
                let status: Value = answer.json().await.unwrap_or_default();
                if status["value"]["ready"] == json!(true) {
                    break;
                }
            }
            assert!(Instant::now() < deadline, "chromedriver did not get ready");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let args = [
            "--headless=new".to_owned(),
            "--no-sandbox".to_owned(),
            "--disable-gpu".to_owned(),
            "--disable-dev-shm-usage".to_owned(),
            "--no-first-run".to_owned(),
            "--enable-precise-memory-info".to_owned(),
            // window.gc(): a heap measured after a collection is the page's, not its garbage's
            "--js-flags=--expose-gc".to_owned(),
            format!("--window-size={width},{height}"),
        ];
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium.display().to_string(), "args": args},
            "goog:loggingPrefs": {"browser": "ALL"},
        }}});
        let answer: Value = http
            .post(format!("{base}/session"))
            .json(&caps)
            .send()
            .await
            .expect("a session")
            .json()
            .await
            .expect("a session's answer");
        let session = answer["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {answer}"))
            .to_owned();
        Browser {
            http,
            base,
            session,
            driver: child,
        }
    }

    async fn send(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}/session/{}{path}", self.base, self.session);
        let mut request = self.http.request(method, url);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let answer: Value = request
            .send()
            .await
            .unwrap_or_else(|e| panic!("webdriver {path}: {e}"))
            .json()
            .await
            .unwrap_or_else(|e| panic!("webdriver {path}: {e}"));
        answer["value"].clone()
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        self.send(reqwest::Method::POST, path, Some(body)).await
    }

    /// Opens `url`.
    pub async fn goto(&self, url: &str) {
        self.post("/url", json!({ "url": url })).await;
    }

    /// Resizes the window (a narrow screen, a phone).
    pub async fn resize(&self, width: u32, height: u32) {
        self.post("/window/rect", json!({ "width": width, "height": height }))
            .await;
    }

    /// Runs `script` (a function body; `arguments` holds `args`) in the page; its return value.
    pub async fn run(&self, script: &str, args: Value) -> Value {
        self.post("/execute/sync", json!({ "script": script, "args": args }))
            .await
    }

    /// The first element matching a CSS selector, if any.
    pub async fn find(&self, css: &str) -> Option<Element> {
        let found = self
            .post("/element", json!({ "using": "css selector", "value": css }))
            .await;
        found[ELEMENT].as_str().map(|id| Element(id.to_owned()))
    }

    /// Waits until an element matches `css`, and answers it.
    pub async fn wait_for(&self, css: &str) -> Element {
        let deadline = Instant::now() + BROWSER_WAIT;
        loop {
            if let Some(element) = self.find(css).await {
                return element;
            }
            self.give_up_at(deadline, &format!("an element matching {css}"))
                .await;
        }
    }

    /// Waits until `script` (a function body) answers `true` in the page.
    pub async fn wait_until(&self, what: &str, script: &str, args: Value) {
        let deadline = Instant::now() + BROWSER_WAIT;
        while self.run(script, args.clone()).await != json!(true) {
            self.give_up_at(deadline, what).await;
        }
    }

    /// Waits until the text of the first element matching `css` contains `text`.
    pub async fn wait_for_text(&self, css: &str, text: &str) {
        self.wait_until(
            &format!("{css} to say {text:?}"),
            "const el = document.querySelector(arguments[0]); return !!el && el.textContent.includes(arguments[1]);",
            json!([css, text]),
        )
        .await;
    }

    async fn give_up_at(&self, deadline: Instant, what: &str) {
        if Instant::now() > deadline {
            let shot = self.screenshot("timed-out").await;
            panic!(
                "waited {BROWSER_WAIT:?} for {what}; the page is in {}",
                shot.display()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    /// Clicks the element matching `css` once it is there.
    pub async fn click(&self, css: &str) {
        let element = self.wait_for(css).await;
        self.click_element(&element).await;
    }

    /// Clicks an element, scrolled to the middle of the view first (a sticky header at the
    /// top must not take the click).
    pub async fn click_element(&self, element: &Element) {
        self.run(
            "arguments[0].scrollIntoView({block: 'center'});",
            json!([{ ELEMENT: element.0 }]),
        )
        .await;
        let answer = self
            .post(&format!("/element/{}/click", element.0), json!({}))
            .await;
        assert!(
            answer.is_null(),
            "click refused: {answer} (the page is in {})",
            self.screenshot("click-refused").await.display()
        );
    }

    /// Types `text` into the element matching `css` (keys as WebDriver sends them: `\u{E007}` is Enter).
    pub async fn type_into(&self, css: &str, text: &str) {
        let element = self.wait_for(css).await;
        self.post(
            &format!("/element/{}/value", element.0),
            json!({ "text": text }),
        )
        .await;
    }

    /// Presses keys on the page itself (the body), as a person's shortcut.
    pub async fn press(&self, keys: &str) {
        let body = self.wait_for("body").await;
        self.post(
            &format!("/element/{}/value", body.0),
            json!({ "text": keys }),
        )
        .await;
    }

    /// A scenario's start: leaves the page shown for a blank one, and forgets the console's
    /// errors so far. The page of a scenario before, whose server stopped, would otherwise go
    /// on trying to reconnect, logging a refused connection whenever its back-off allows — on
    /// a busy machine, after the next scenario began.
    pub async fn start_afresh(&self) {
        self.goto("about:blank").await;
        self.console_errors().await;
    }

    /// The page's console errors since the last call (JavaScript errors, refused loads,
    /// Content-Security-Policy violations), as Chromium logs them.
    pub async fn console_errors(&self) -> Vec<String> {
        let logs = self.post("/se/log", json!({ "type": "browser" })).await;
        logs.as_array()
            .map(|entries| {
                entries
                    .iter()
                    .filter(|e| e["level"] == json!("SEVERE"))
                    .filter_map(|e| e["message"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Saves a screenshot as `target/browser-artifacts/<name>.png`; answers its path.
    pub async fn screenshot(&self, name: &str) -> PathBuf {
        let data = self.send(reqwest::Method::GET, "/screenshot", None).await;
        let path = artifacts().join(format!("{name}.png"));
        let bytes = decode_base64(data.as_str().unwrap_or_default());
        std::fs::write(&path, bytes).expect("the screenshot is written");
        path
    }

    /// Ends the session and the driver.
    pub async fn quit(mut self) {
        self.send(reqwest::Method::DELETE, "", None).await;
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// Standard base64 (the screenshot's encoding) to bytes; anything else is skipped.
fn decode_base64(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let sextets: Vec<u8> = text.bytes().filter_map(value).collect();
    let mut bytes = Vec::with_capacity(sextets.len() * 3 / 4);
    for chunk in sextets.chunks(4) {
        let mut n: u32 = 0;
        for (i, s) in chunk.iter().enumerate() {
            n |= u32::from(*s) << (18 - 6 * i);
        }
        let take = chunk.len().saturating_sub(1);
        bytes.extend_from_slice(&n.to_be_bytes()[1..=take]);
    }
    bytes
}

/// This module's own test: it needs nothing.
pub fn register(suites: &mut crate::Suites) {
    suites.add(
        "webdriver::base64_decodes_as_the_rfc_says",
        &crate::parts::Need::nothing(),
        base64_decodes_as_the_rfc_says,
    );
}

/// Screenshots come back as standard base64, padding included.
fn base64_decodes_as_the_rfc_says() {
    assert_eq!(decode_base64("TWFu"), b"Man");
    assert_eq!(decode_base64("TWE="), b"Ma");
    assert_eq!(decode_base64("TQ=="), b"M");
}

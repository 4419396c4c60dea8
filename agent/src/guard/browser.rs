//! `redline guard`'s browser: headless Chromium driven over WebDriver by chromedriver
//! (through `fantoccini`), one session per item at the item's viewport and pixel ratio.
//! It loads the page, runs `find.js` there, scrolls, and screenshots the viewport; what
//! those answers mean is `compare`'s and `mod.rs`'s.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder};
use redline_protocol::{Point, Rect, Viewport};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::process::{Child, Command};

use super::compare::Pixels;

/// How long chromedriver may take to answer its first session, and a page to load and
/// show every element it will show.
const START_TIMEOUT: Duration = Duration::from_secs(20);
const SETTLE_TIMEOUT: Duration = Duration::from_secs(5);
const POLL: Duration = Duration::from_millis(100);
/// At most this many page elements are boxed for one captured element (as "Show on page").
const MAX_MATCHES: u32 = 20;

/// Where chromedriver and Chromium are.
#[derive(Debug, Clone)]
pub struct Programs {
    pub chromedriver: PathBuf,
    pub chromium: Option<PathBuf>,
}

/// A running chromedriver, ended when dropped.
pub struct Driver {
    url: String,
    chromium: Option<PathBuf>,
    _process: Child,
}

/// What `find.js` answers.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PageFound {
    pub located: Vec<redline_protocol::locate::Located>,
    pub boxes: Vec<Rect>,
    pub scroll: Point,
    pub viewport: Viewport,
    pub device_pixel_ratio: f64,
    pub git_sha: Option<String>,
    pub url: String,
    pub status: Option<u16>,
    pub ready: bool,
}

impl PageFound {
    pub fn all_found(&self) -> bool {
        self.located.iter().all(|l| l.matched_by.is_some())
    }
}

impl Driver {
    pub async fn start(programs: &Programs) -> Result<Driver, String> {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("no free port for chromedriver: {e}"))?
            .port();
        let process = Command::new(&programs.chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("could not start {}: {e}", programs.chromedriver.display()))?;
        let driver = Driver {
            url: format!("http://127.0.0.1:{port}"),
            chromium: programs.chromium.clone(),
            _process: process,
        };
        // Ready once it accepts connections.
        let started = Instant::now();
        while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
            if started.elapsed() > START_TIMEOUT {
                return Err("chromedriver did not start listening".to_owned());
            }
            tokio::time::sleep(POLL).await;
        }
        Ok(driver)
    }

    /// A headless window whose viewport is `viewport` at `scale` device px per CSS px.
    pub async fn session(&self, viewport: Viewport, scale: f64) -> Result<Page, String> {
        let mut args = vec![
            "--headless=new".to_owned(),
            "--no-sandbox".to_owned(),
            "--disable-gpu".to_owned(),
            "--hide-scrollbars".to_owned(),
            "--no-first-run".to_owned(),
            format!("--window-size={},{}", viewport.width.round(), viewport.height.round()),
            format!("--force-device-scale-factor={scale}"),
        ];
        args.sort();
        let mut options = json!({ "args": args });
        if let Some(chromium) = &self.chromium {
            options["binary"] = json!(chromium);
        }
        let mut caps = serde_json::Map::new();
        caps.insert("browserName".into(), json!("chrome"));
        caps.insert("goog:chromeOptions".into(), options);
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let client = ClientBuilder::new(connector)
            .capabilities(caps)
            .connect(&self.url)
            .await
            .map_err(|e| format!("could not start Chromium: {e}"))?;
        Ok(Page { client })
    }
}

/// One headless window.
pub struct Page {
    client: Client,
}

impl Page {
    /// Loads `url`; an error when the browser could not (a network error page).
    pub async fn open(&self, url: &str) -> Result<(), String> {
        self.client.goto(url).await.map_err(|e| format!("could not load {url}: {e}"))
    }

    /// Runs `find.js` until every element is found or the page has had
    /// [`SETTLE_TIMEOUT`] to render them: an app draws its page after it loads.
    pub async fn find(&self, elements: &Value) -> Result<PageFound, String> {
        let started = Instant::now();
        loop {
            let found = self.find_once(elements).await?;
            let failed = found.url.starts_with("chrome-error:") || found.status.is_some_and(|s| s >= 400);
            if (found.ready && (found.all_found() || failed)) || started.elapsed() > SETTLE_TIMEOUT {
                return Ok(found);
            }
            tokio::time::sleep(POLL).await;
        }
    }

    async fn find_once(&self, elements: &Value) -> Result<PageFound, String> {
        let answer = self
            .client
            .execute(include_str!("find.js"), vec![elements.clone(), json!(MAX_MATCHES)])
            .await
            .map_err(|e| format!("the page did not answer: {e}"))?;
        serde_json::from_value(answer).map_err(|e| format!("the page answered something else: {e}"))
    }

    /// Scrolls to `to` and waits two frames, so the screenshot shows the page there.
    pub async fn scroll_to(&self, to: Point) -> Result<(), String> {
        let script = "const [x, y, done] = arguments; window.scrollTo(x, y); \
                      requestAnimationFrame(() => requestAnimationFrame(() => done()));";
        self.client
            .execute_async(script, vec![json!(to.x), json!(to.y)])
            .await
            .map(drop)
            .map_err(|e| format!("could not scroll: {e}"))
    }

    /// The viewport as it shows now, decoded.
    pub async fn screenshot(&self) -> Result<Pixels, String> {
        let png = self.client.screenshot().await.map_err(|e| format!("no screenshot: {e}"))?;
        super::pixels::decode_png(&png)
    }

    pub async fn close(self) {
        let _ = self.client.close().await;
    }
}

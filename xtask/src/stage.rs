//! The demo stage: the React app in `demo/`, built with the anchors plugin on (as a team
//! builds its review stage) into `demo/dist/`, and served over HTTP as a deployed app
//! would be. `/` serves it plainly; `/strict/` serves the same files with the strict CSP
//! some stages send (`default-src 'self'; script-src 'self'`), under which wasm cannot
//! run in a content script. The build states its commit as `{{GIT_SHA}}`, which the
//! server fills in with the checkout's commit, so the page's `data-fabric-src` anchors
//! read "as of" the commit that holds them even after a commit that left the demo alone.
//!
//! Another build is served by starting the stage again on the same address with
//! `--app DIR` (a changed copy of `demo/`'s sources, built here the same way) and
//! `--sha SHA` (the commit it stands for): what a deploy does to a real stage. The
//! end-to-end tests of "Check on stage" do so.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result};

use crate::process::{self, cmd};
use crate::setup;

pub const STRICT_CSP: &str = "default-src 'self'; script-src 'self'";

/// Builds the demo app into `demo/dist/` with the anchors plugin on, unless the build
/// there is newer than every source it is made from; returns the folder.
pub fn build() -> Result<PathBuf> {
    build_app(&crate::workspace::root().join("demo"))
}

/// Builds the app in `app` (`demo/` or a changed copy of its sources) into `app/dist/`,
/// unless the build there is newer than every source; returns the folder. A copy takes
/// its packages from `demo/node_modules`, linked in.
fn build_app(app: &Path) -> Result<PathBuf> {
    let root = crate::workspace::root();
    let demo = root.join("demo");
    let dist = app.join("dist");
    let built = std::fs::metadata(dist.join("index.html")).and_then(|m| m.modified()).ok();
    let sources = ["index.html", "vite.config.ts", "package-lock.json", "src", "public"].map(|s| app.join(s));
    let plugin = root.join("plugins/redline-anchors/src");
    let newest = sources.iter().chain([&plugin]).filter_map(|p| newest_in(p)).max();
    if built.is_some() && built >= newest {
        return Ok(dist);
    }
    // The plugin is linked from `plugins/` and takes Babel from the demo's packages.
    setup::npm_ci(&demo)?;
    let modules = app.join("node_modules");
    if !modules.exists() {
        link_dir(&demo.join("node_modules"), &modules)?;
    }
    // Into a fresh folder first, so a stage running meanwhile never serves half a build.
    let fresh = app.join(format!("dist.{}", std::process::id()));
    let mut vite = cmd(modules.join(".bin/vite"));
    vite.current_dir(app).args(["build", "--emptyOutDir", "--logLevel", "warn", "--outDir"]).arg(&fresh);
    vite.env("REDLINE_ANCHORS", "1").env("REDLINE_GIT_SHA", "{{GIT_SHA}}");
    process::run(&mut vite)?;
    let _ = std::fs::remove_dir_all(&dist);
    std::fs::rename(&fresh, &dist).with_context(|| format!("moving the demo build to {}", dist.display()))?;
    Ok(dist)
}

#[cfg(unix)]
fn link_dir(target: &Path, link: &Path) -> Result<()> {
    std::os::unix::fs::symlink(target, link).with_context(|| format!("linking {}", link.display()))
}

#[cfg(windows)]
fn link_dir(target: &Path, link: &Path) -> Result<()> {
    std::os::windows::fs::symlink_dir(target, link).with_context(|| format!("linking {}", link.display()))
}

/// The newest modification time of `path` or of any file under it.
fn newest_in(path: &Path) -> Option<std::time::SystemTime> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_dir() {
        return meta.modified().ok();
    }
    std::fs::read_dir(path).ok()?.flatten().filter_map(|e| newest_in(&e.path())).max()
}

/// Serves the stage on `addr` until the process ends, printing its URL first: the build
/// of `app` (default `demo/`) as the commit `sha` (default the checkout's).
pub fn serve_forever(addr: &str, app: Option<PathBuf>, sha: Option<String>) -> Result<()> {
    let dist = match app {
        Some(app) => build_app(&app)?,
        None => build()?,
    };
    let listener = TcpListener::bind(addr).with_context(|| format!("binding the demo stage to {addr}"))?;
    println!("demo stage on http://{}/", listener.local_addr()?);
    accept(listener, dist, sha.unwrap_or_else(git_sha));
    Ok(())
}

/// Serves the stage on `addr` from a background thread; returns where it listens.
pub fn spawn(addr: &str) -> Result<SocketAddr> {
    let dist = build()?;
    let listener = TcpListener::bind(addr).with_context(|| format!("binding the demo stage to {addr}"))?;
    let local = listener.local_addr()?;
    let sha = git_sha();
    std::thread::spawn(move || accept(listener, dist, sha));
    Ok(local)
}

/// The checkout's commit, or zeros before the first commit.
pub fn git_sha() -> String {
    crate::process::output(crate::process::cmd("git").args(["rev-parse", "HEAD"]))
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "0".repeat(40))
}

fn accept(listener: TcpListener, root: PathBuf, sha: String) {
    for stream in listener.incoming().flatten() {
        let (root, sha) = (root.clone(), sha.clone());
        std::thread::spawn(move || {
            let _ = respond(stream, &root, &sha);
        });
    }
}

fn respond(mut stream: TcpStream, root: &Path, sha: &str) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut header = String::new();
    while reader.read_line(&mut header)? > 2 {
        header.clear();
    }
    let path = request_line.split_whitespace().nth(1).unwrap_or("/");
    let response = Response::for_path(root, path, sha);
    let mut head = format!(
        "HTTP/1.1 {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n",
        response.status,
        response.content_type,
        response.body.len()
    );
    if let Some(csp) = response.csp {
        head.push_str(&format!("Content-Security-Policy: {csp}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(&response.body)
}

struct Response {
    status: &'static str,
    content_type: &'static str,
    csp: Option<&'static str>,
    body: Vec<u8>,
}

impl Response {
    fn for_path(root: &Path, path: &str, sha: &str) -> Response {
        let path = path.split(['?', '#']).next().unwrap_or("/");
        let (csp, path) = match path.strip_prefix("/strict") {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => (Some(STRICT_CSP), rest),
            _ => (None, path),
        };
        let Some(file) = resolve(root, path) else { return Response::not_found() };
        let Ok(body) = std::fs::read(&file) else { return Response::not_found() };
        let content_type = content_type(&file);
        let body = if content_type.starts_with("text/html") {
            String::from_utf8_lossy(&body).replace("{{GIT_SHA}}", sha).into_bytes()
        } else {
            body
        };
        Response { status: "200 OK", content_type, csp, body }
    }

    fn not_found() -> Response {
        Response {
            status: "404 Not Found",
            content_type: "text/plain",
            csp: None,
            body: b"not found".to_vec(),
        }
    }
}

/// The file under `root` for a URL path; `None` for anything that would leave `root`.
fn resolve(root: &Path, path: &str) -> Option<PathBuf> {
    let relative = Path::new(path.trim_start_matches('/'));
    if relative.components().any(|c| !matches!(c, Component::Normal(_))) {
        return None;
    }
    let file = root.join(relative);
    Some(if file.is_dir() { file.join("index.html") } else { file })
}

fn content_type(file: &Path) -> &'static str {
    match file.extension().and_then(|e| e.to_str()) {
        Some("html") => "text/html; charset=utf-8",
        Some("css") => "text/css",
        Some("js") => "text/javascript",
        Some("png") => "image/png",
        Some("svg") => "image/svg+xml",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A built stage in miniature (what `build` writes has this shape), removed when dropped.
    struct Fixture(PathBuf);

    impl Drop for Fixture {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn fixture(name: &str) -> Fixture {
        let dir = std::env::temp_dir().join(format!("redline-stage-test-{}-{name}", std::process::id()));
        std::fs::create_dir_all(dir.join("assets")).unwrap();
        std::fs::write(
            dir.join("index.html"),
            r#"<html><head><meta name="fabric-git-sha" content="{{GIT_SHA}}"></head></html>"#,
        )
        .unwrap();
        std::fs::write(dir.join("assets/app.css"), "body {}").unwrap();
        Fixture(dir)
    }

    #[test]
    fn strict_prefix_serves_the_same_page_with_a_csp() {
        let root = fixture("csp");
        let plain = Response::for_path(&root.0, "/", "abc1234");
        let strict = Response::for_path(&root.0, "/strict/", "abc1234");
        assert_eq!(plain.csp, None);
        assert_eq!(strict.csp, Some(STRICT_CSP));
        assert_eq!(plain.body, strict.body);
        let html = String::from_utf8(plain.body).unwrap();
        assert!(html.contains(r#"<meta name="fabric-git-sha" content="abc1234">"#));
    }

    #[test]
    fn paths_cannot_leave_the_stage_folder() {
        let fixture = fixture("paths");
        let root = &fixture.0;
        assert_eq!(Response::for_path(root, "/../Cargo.toml", "x").status, "404 Not Found");
        assert_eq!(Response::for_path(root, "/strict/../../Cargo.toml", "x").status, "404 Not Found");
        assert_eq!(Response::for_path(root, "/strictly.css", "x").status, "404 Not Found");
        assert_eq!(Response::for_path(root, "/assets/app.css?v=1", "x").content_type, "text/css");
        assert_eq!(Response::for_path(root, "/strict/assets/app.css", "x").status, "200 OK");
    }

    #[test]
    fn the_demo_writes_no_anchors_by_hand() {
        // The plugin stamps them at build time; a hand-written one would go stale.
        let app = std::fs::read_to_string(crate::workspace::root().join("demo/src/App.tsx")).unwrap();
        assert!(!app.contains("data-fabric-src="));
        assert!(app.contains("function OrderToolbar()"));
    }
}

//! The demo stage: `demo/` served over HTTP, as a deployed app would be. `/` serves it
//! plainly; `/strict/` serves the same files with the strict CSP some stages send
//! (`default-src 'self'; script-src 'self'`), under which wasm cannot run in a content
//! script. `{{GIT_SHA}}` in HTML becomes the checkout's commit, so the page's
//! `data-fabric-src` anchors read "as of" the commit that holds them.
//!
//! A second build is served by starting the stage again on the same address with
//! `--root DIR` (a changed copy of `demo/`) and `--sha SHA` (the commit it stands for):
//! what a deploy does to a real stage. The end-to-end tests of "Check on stage" do so.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result};

pub const STRICT_CSP: &str = "default-src 'self'; script-src 'self'";

/// Serves the stage on `addr` until the process ends, printing its URL first: the files
/// of `root` (default `demo/`) as the build `sha` (default the checkout's commit).
pub fn serve_forever(addr: &str, root: Option<PathBuf>, sha: Option<String>) -> Result<()> {
    let listener = TcpListener::bind(addr).with_context(|| format!("binding the demo stage to {addr}"))?;
    println!("demo stage on http://{}/", listener.local_addr()?);
    let root = root.unwrap_or_else(|| crate::root().join("demo"));
    accept(listener, root, sha.unwrap_or_else(git_sha));
    Ok(())
}

/// Serves the stage on `addr` from a background thread; returns where it listens.
pub fn spawn(addr: &str) -> Result<SocketAddr> {
    let listener = TcpListener::bind(addr).with_context(|| format!("binding the demo stage to {addr}"))?;
    let local = listener.local_addr()?;
    let sha = git_sha();
    std::thread::spawn(move || accept(listener, crate::root().join("demo"), sha));
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
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demo() -> PathBuf {
        crate::root().join("demo")
    }

    #[test]
    fn strict_prefix_serves_the_same_page_with_a_csp() {
        let plain = Response::for_path(&demo(), "/", "abc1234");
        let strict = Response::for_path(&demo(), "/strict/", "abc1234");
        assert_eq!(plain.csp, None);
        assert_eq!(strict.csp, Some(STRICT_CSP));
        assert_eq!(plain.body, strict.body);
        let html = String::from_utf8(plain.body).unwrap();
        assert!(html.contains(r#"<meta name="fabric-git-sha" content="abc1234">"#));
    }

    #[test]
    fn paths_cannot_leave_the_demo_folder() {
        assert_eq!(Response::for_path(&demo(), "/../Cargo.toml", "x").status, "404 Not Found");
        assert_eq!(Response::for_path(&demo(), "/strict/../../Cargo.toml", "x").status, "404 Not Found");
        assert_eq!(Response::for_path(&demo(), "/strictly.css", "x").status, "404 Not Found");
        assert_eq!(Response::for_path(&demo(), "/app.css?v=1", "x").content_type, "text/css");
    }

    #[test]
    fn every_anchor_names_its_own_line() {
        let html = std::fs::read_to_string(demo().join("index.html")).unwrap();
        let mut anchors = 0;
        for (index, line) in html.lines().enumerate() {
            if let Some(start) = line.find("data-fabric-src=\"demo/index.html:") {
                let rest = &line[start + "data-fabric-src=\"demo/index.html:".len()..];
                let number: usize = rest[..rest.find('"').unwrap()].parse().unwrap();
                assert_eq!(number, index + 1, "anchor on line {} says {number}", index + 1);
                anchors += 1;
            }
        }
        assert!(anchors > 20);
    }
}

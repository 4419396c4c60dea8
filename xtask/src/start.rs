//! `cargo xtask start`: everything a person needs to try Redline on this machine.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::build::{self, Profile};
use crate::process::{self, cmd};
use crate::{setup, stage};

pub struct Options {
    pub browser: bool,
    pub port: u16,
    pub stage_port: u16,
}

/// The scopes the dev token gets: read the queue, work it as an agent, and file.
const DEV_SCOPES: &str = "changes:project:read,changes:project:write,changes:project:file";

pub fn run(options: Options) -> Result<()> {
    if options.browser {
        setup::for_browser()?;
    }
    build::extension(Profile::Release)?.print();
    let redline = build_server()?;
    let data = crate::workspace::root().join(".redline");
    std::fs::create_dir_all(&data)?;

    let stage_addr = stage::spawn(&format!("127.0.0.1:{}", options.stage_port))?;
    let stage_url = format!("http://{stage_addr}/");
    let dev = DevSetup::load_or_create(&redline, &data, &stage_url)?;
    let (mut server, api_url) = serve(&redline, &data, options.port)?;

    println!();
    println!("Redline is running.");
    println!("  server      {api_url}  (data in {})", data.display());
    println!("  demo stage  {stage_url}  (strict CSP: {stage_url}strict/)");
    println!();
    println!("Load the extension: chrome://extensions → Developer mode → Load unpacked →");
    println!("  {}", build::extension_dir().display());
    println!("Then open Redline's side panel → Settings, and paste:");
    println!("  API URL  {api_url}");
    println!("  token    {}", dev.token);
    println!();
    println!("Press Ctrl-C to stop.");
    if options.browser {
        launch_browser(&stage_url)?;
    }
    let status = server.wait()?;
    bail!("the server stopped ({status})")
}

/// The server binary, built like the tests build it.
pub fn build_server() -> Result<PathBuf> {
    process::run(cmd("cargo").args(["build", "--package", "redline-server", "--bin", "redline"]))?;
    Ok(crate::workspace::target_dir().join("debug/redline"))
}

/// The server binary as users install it (`cargo install --path server` builds release),
/// for benchmarks of what a filer waits for on the server.
pub fn build_release_server() -> Result<PathBuf> {
    process::run(cmd("cargo").args([
        "build",
        "--release",
        "--package",
        "redline-server",
        "--bin",
        "redline",
    ]))?;
    Ok(crate::workspace::target_dir().join("release/redline"))
}

/// Starts `redline serve` and waits until it accepts connections.
pub fn serve(redline: &Path, data: &Path, port: u16) -> Result<(Child, String)> {
    let addr = format!("127.0.0.1:{port}");
    spawn_server(redline, &["--addr".as_ref(), addr.as_ref(), "--data".as_ref(), data.as_os_str()])
}

/// Starts `redline serve` with `args` and waits until it accepts connections; answers
/// the server and its URL.
pub fn spawn_server(redline: &Path, args: &[&OsStr]) -> Result<(Child, String)> {
    let mut server = Command::new(redline)
        .arg("serve")
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .context("starting the server")?;
    let stdout = server.stdout.take().expect("piped");
    let mut lines = BufReader::new(stdout).lines();
    let url = loop {
        let Some(line) = lines.next() else { bail!("the server exited before listening") };
        let line = line?;
        println!("{line}");
        if let Some(url) = line.split_whitespace().find(|w| w.starts_with("http://"))
            && line.contains("listening")
        {
            break url.trim_end_matches('/').to_owned();
        }
    };
    std::thread::spawn(move || lines.map_while(Result::ok).for_each(|l| println!("{l}")));
    Ok((server, url))
}

/// The dev project, its demo stage and a token, created once and kept in
/// `.redline/dev.json` (mode 0600: it holds the token, which the server only stores hashed).
struct DevSetup {
    token: String,
}

impl DevSetup {
    fn load_or_create(redline: &Path, data: &Path, stage_url: &str) -> Result<DevSetup> {
        let file = data.join("dev.json");
        let saved = std::fs::read_to_string(&file).ok();
        if let Some(text) = &saved {
            let saved: Value = serde_json::from_str(text)?;
            if saved["stageUrl"] == stage_url
                && let Some(token) = saved["token"].as_str()
            {
                return Ok(DevSetup { token: token.to_owned() });
            }
        }
        let store = ["--data".as_ref(), data.as_os_str()];
        let admin = |args: &[&str]| admin(redline, &store, args);
        // dev.json is written after the project exists: without it, there is no project yet.
        if saved.is_none() {
            admin(&["project", "add", "dev"])?;
        }
        admin(&[
            "stage",
            "add",
            "--project",
            "dev",
            "--branch",
            "main",
            "--type",
            "production",
            "--url",
            stage_url,
            "--sha",
            &stage::git_sha(),
        ])?;
        let created =
            admin(&["token", "create", "--project", "dev", "--scope", DEV_SCOPES, "--name", "dev"])?;
        let token =
            created["token"].as_str().context("`redline token create --json` printed no token")?.to_owned();
        write_private(&file, &serde_json::json!({ "stageUrl": stage_url, "token": token }).to_string())?;
        Ok(DevSetup { token })
    }
}

/// Runs admin command `args` of `redline` on `store` (its `--data` or `--database-url`)
/// and answers what it printed with `--json`.
pub fn admin(redline: &Path, store: &[&OsStr], args: &[&str]) -> Result<Value> {
    let mut command = Command::new(redline);
    command.args(args).args(store).arg("--json");
    Ok(serde_json::from_str(&process::output(&mut command)?)?)
}

fn write_private(file: &Path, text: &str) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut out =
        std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(file)?;
    out.write_all(text.as_bytes())?;
    Ok(())
}

/// Chromium with the extension loaded and the demo stage open, in a fresh profile.
fn launch_browser(stage_url: &str) -> Result<()> {
    let extension = build::extension_dir();
    let profile = crate::workspace::root().join("target/chromium-profile");
    Command::new(setup::CHROMIUM)
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--load-extension={}", extension.display()))
        .arg(format!("--disable-extensions-except={}", extension.display()))
        .args([
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .args(if setup::is_root() { &["--no-sandbox"][..] } else { &[] })
        .arg(stage_url)
        .spawn()
        .context("launching Chromium")?;
    Ok(())
}

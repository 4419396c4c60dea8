//! A throwaway S3-compatible server for the blob store's S3 test: moto's server (PyPI
//! `moto[s3]`, pinned), installed into a virtual environment under `target/` when
//! missing, on a free port of loopback; stopped when dropped. It accepts any
//! credentials and keeps objects in memory.

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::process::{self, cmd};

/// What the environment installs, exactly.
const REQUIREMENTS: [&str; 3] = ["moto[s3]==5.2.5", "flask==3.1.3", "flask-cors==6.0.5"];

pub struct S3Server {
    child: Child,
    pub endpoint: String,
}

impl S3Server {
    pub fn start() -> Result<S3Server> {
        let bin = moto_server()?;
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let child = Command::new(&bin)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        let mut server = S3Server { child, endpoint: format!("http://127.0.0.1:{port}") };
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(status) = server.child.try_wait()? {
                bail!("the S3 server exited at start ({status})");
            }
            if started.elapsed() > Duration::from_secs(30) {
                bail!("the S3 server did not listen within 30 s");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(server)
    }

    /// The variables that point the server's S3 store (and the test) at this server.
    pub fn env(&self) -> [(&'static str, String); 5] {
        [
            ("AWS_ENDPOINT_URL", self.endpoint.clone()),
            ("AWS_ALLOW_HTTP", "true".to_owned()),
            ("AWS_ACCESS_KEY_ID", "redline-test".to_owned()),
            ("AWS_SECRET_ACCESS_KEY", "redline-test".to_owned()),
            ("AWS_REGION", "us-east-1".to_owned()),
        ]
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Installs `moto_server` when missing or pinned differently.
pub fn install() -> Result<()> {
    moto_server().map(drop)
}

/// `moto_server` from `target/s3-venv`, installed when missing or pinned differently.
fn moto_server() -> Result<PathBuf> {
    let venv = crate::workspace::target_dir().join("s3-venv");
    let bin = venv.join("bin/moto_server");
    let stamp = venv.join("requirements.txt");
    let wanted = REQUIREMENTS.join("\n");
    if bin.exists() && std::fs::read_to_string(&stamp).is_ok_and(|have| have == wanted) {
        return Ok(bin);
    }
    let _ = std::fs::remove_dir_all(&venv);
    if process::run(cmd("python3").args(["-m", "venv"]).arg(&venv)).is_err() {
        // Debian's python3 comes without `venv`.
        let install = "apt-get update && apt-get install -y python3-venv";
        if !crate::setup::is_root() {
            bail!(
                "Python 3 with venv is needed for the S3 test server; install it with: sudo sh -c '{install}'"
            );
        }
        process::run(cmd("sh").args(["-c", install]).env("DEBIAN_FRONTEND", "noninteractive"))?;
        let _ = std::fs::remove_dir_all(&venv);
        process::run(cmd("python3").args(["-m", "venv"]).arg(&venv))?;
    }
    process::run(
        cmd(venv.join("bin/pip"))
            .args(["install", "--quiet", "--disable-pip-version-check"])
            .args(REQUIREMENTS),
    )?;
    std::fs::write(&stamp, wanted)?;
    Ok(bin)
}

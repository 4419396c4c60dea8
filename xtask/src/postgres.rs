//! A throwaway PostgreSQL cluster for the server's test suite on Postgres: Debian's
//! `postgresql` package (installed when missing), a fresh data directory, a free port on
//! loopback, trust authentication; stopped and removed when dropped.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::process;

pub struct Cluster {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    pub url: String,
}

impl Cluster {
    pub fn start() -> Result<Cluster> {
        let bin = server_bin()?;
        let dir = std::env::temp_dir().join(format!("redline-test-pg-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        // initdb refuses to run as root: the cluster belongs to the package's user.
        if crate::setup::is_root() {
            process::run(Command::new("chown").arg("postgres:postgres").arg(&dir))?;
        }
        let data = dir.join("data");
        run_as_postgres(&bin.join("initdb"), &["-A", "trust", "-U", "postgres", "-D", &path(&data)])?;
        let port = free_port()?;
        let options = format!("-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off", path(&dir));
        let log = path(&dir.join("log"));
        run_as_postgres(
            &bin.join("pg_ctl"),
            &["-D", &path(&data), "-o", &options, "-l", &log, "-w", "start"],
        )?;
        Ok(Cluster { bin, dir, port, url: format!("postgres://postgres@127.0.0.1:{port}/postgres") })
    }

    /// A new, empty database of the cluster, for a run that needs a store of its own;
    /// answers its URL.
    pub fn create_database(&self, name: &str) -> Result<String> {
        let port = self.port.to_string();
        let createdb = self.bin.join("createdb");
        run_as_postgres(&createdb, &["-h", "127.0.0.1", "-p", &port, "-U", "postgres", name])?;
        Ok(format!("postgres://postgres@127.0.0.1:{}/{name}", self.port))
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let data = path(&self.dir.join("data"));
        let _ = run_as_postgres(&self.bin.join("pg_ctl"), &["-D", &data, "-m", "fast", "-w", "stop"]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn run_as_postgres(program: &Path, args: &[&str]) -> Result<()> {
    let mut command = if crate::setup::is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    };
    command.args(args);
    process::output(&mut command).map(drop)
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Installs Debian's PostgreSQL server when none is.
pub fn install() -> Result<()> {
    server_bin().map(drop)
}

/// The newest installed server's `bin/`, installing Debian's package when none is.
fn server_bin() -> Result<PathBuf> {
    if let Some(bin) = newest_server() {
        return Ok(bin);
    }
    let install = "apt-get update && apt-get install -y postgresql";
    if !crate::setup::is_root() {
        bail!("PostgreSQL is missing; install it with: sudo sh -c '{install}'");
    }
    process::run(crate::process::cmd("sh").args(["-c", install]).env("DEBIAN_FRONTEND", "noninteractive"))?;
    newest_server().context("PostgreSQL was installed but no server binaries were found")
}

fn newest_server() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .filter(|(_, bin): &(u32, PathBuf)| bin.join("initdb").exists())
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

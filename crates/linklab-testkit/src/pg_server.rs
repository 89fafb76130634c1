//! A throwaway PostgreSQL server for the PostgreSQL store's tests and bench: Debian's server
//! binaries (`postgresql`, installed by scripts/setup) run as the `postgres` user (the
//! server refuses root) on a data folder under the temporary folder, listening on 127.0.0.1
//! only (without fsync for the tests, with it for the bench); stopped and removed when
//! dropped, a failing test too.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::free_port;

/// A running server and its folder.
pub struct PgServer {
    child: Child,
    dir: PathBuf,
    port: u16,
}

/// The newest PostgreSQL's server binaries (`/usr/lib/postgresql/N/bin`).
fn bin_dir() -> PathBuf {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("/usr/lib/postgresql: Debian's postgresql package is needed (scripts/setup)")
        .filter_map(|e| {
            let e = e.ok()?;
            let n = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((n, bin))
        })
        .collect();
    found.sort();
    found
        .pop()
        .expect("no /usr/lib/postgresql/*/bin/initdb: install Debian's postgresql (scripts/setup)")
        .1
}

/// The `postgres` user's uid and gid.
fn postgres_user() -> (u32, u32) {
    let name = std::ffi::CString::new("postgres").unwrap();
    // SAFETY: getpwnam with a NUL-terminated name; the entry is read before any other call.
    let pw = unsafe { libc::getpwnam(name.as_ptr()) };
    assert!(
        !pw.is_null(),
        "no postgres user (Debian's postgresql package makes it)"
    );
    // SAFETY: checked non-null above.
    unsafe { ((*pw).pw_uid, (*pw).pw_gid) }
}

/// A command run as the `postgres` user.
fn as_postgres(program: &Path) -> Command {
    let (uid, gid) = postgres_user();
    let mut cmd = Command::new(program);
    cmd.uid(uid)
        .gid(gid)
        .env("HOME", "/tmp")
        .current_dir("/tmp");
    cmd
}

impl PgServer {
    /// initdb's a fresh cluster under the temporary folder (named after `name`) and starts
    /// its server without fsync (nothing in a test needs to outlive a crash); returns once
    /// it takes connections.
    pub fn start(name: &str) -> PgServer {
        PgServer::start_with(name, false)
    }

    /// The same with `fsync` as asked: on, commits wait for the disk as a real server's do.
    pub fn start_with(name: &str, fsync: bool) -> PgServer {
        let bin = bin_dir();
        let dir = std::env::temp_dir().join(format!("linklab-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (uid, gid) = postgres_user();
        std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).unwrap();
        let data = dir.join("data");
        let out = as_postgres(&bin.join("initdb"))
            .args([
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
                "-E",
                "UTF8",
                "-D",
            ])
            .arg(&data)
            .output()
            .expect("run initdb");
        assert!(
            out.status.success(),
            "initdb: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let port = free_port();
        let log = std::fs::File::create(dir.join("server.log")).unwrap();
        let child = as_postgres(&bin.join("postgres"))
            .arg("-D")
            .arg(&data)
            .args(["-h", "127.0.0.1", "-k", ""])
            .args(["-p", &port.to_string()])
            .args(["-c", if fsync { "fsync=on" } else { "fsync=off" }])
            .args(["-c", "max_connections=100"])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start postgres");
        let server = PgServer { child, dir, port };
        server.wait_ready();
        server
    }

    /// Polls until the server takes a connection (a minute at most).
    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if postgres::Client::connect(&self.url("postgres"), postgres::NoTls).is_ok() {
                return;
            }
            let log = std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
            assert!(Instant::now() < deadline, "postgres never came up: {log}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The URL of database `db` on this server.
    pub fn url(&self, db: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{db}", self.port)
    }

    /// Creates an empty database `db`; its URL.
    pub fn create_db(&self, db: &str) -> String {
        let mut c = postgres::Client::connect(&self.url("postgres"), postgres::NoTls).unwrap();
        c.batch_execute(&format!("CREATE DATABASE {db}")).unwrap();
        self.url(db)
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        // SIGQUIT: the server's immediate shutdown (nothing here needs keeping).
        // SAFETY: a signal to the child this helper started.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGQUIT) };
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

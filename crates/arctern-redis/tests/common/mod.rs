//! A real `redis-server` on a free loopback port, stopped when dropped.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct RedisServer {
    pub port: u16,
    child: Option<Child>,
    dir: PathBuf,
}

/// `redis-server` (`ARCTERN_REDIS_SERVER` when set, else the one on `PATH`), or `None` (with a
/// message) when it is not installed and the run does not require it
/// (`ARCTERN_REQUIRE_REDIS=1`, set by `scripts/fleet.sh test`, makes it a failure).
pub fn redis_server() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("ARCTERN_REDIS_SERVER").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("redis-server"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var_os("ARCTERN_REQUIRE_REDIS").is_none(),
            "redis-server is not installed (apt-get install redis-server)"
        );
        eprintln!(
            "skipped: redis-server is not installed (apt-get install redis-server; scripts/fleet.sh test installs it)"
        );
    }
    found
}

impl RedisServer {
    pub fn start(binary: &PathBuf) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir =
            std::env::temp_dir().join(format!("arctern-redis-test-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut server = RedisServer {
            port,
            child: None,
            dir,
        };
        server.spawn(binary);
        server
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// Starts (again) on the same port, and waits until it accepts connections.
    pub fn spawn(&mut self, binary: &PathBuf) {
        let mut command = Command::new(binary);
        // A redis-server that scripts/fleet.sh fetched into its cache needs the cache's
        // libraries.
        if let Some(libs) = std::env::var_os("ARCTERN_TOOL_LIBS").filter(|l| !l.is_empty()) {
            command.env("LD_LIBRARY_PATH", libs);
        }
        let child = command
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
            .args([
                "--save",
                "",
                "--appendonly",
                "no",
                "--protected-mode",
                "yes",
            ])
            .arg("--dir")
            .arg(&self.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL: an outage.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

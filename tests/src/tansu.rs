//! A separate Kafka-protocol broker for the end-to-end and crash tests: `tansu` (the Rust
//! crate, 0.6.0, in-memory or SQLite storage), started on a loopback port and killed when dropped.
//! `scripts/setup --tansu` installs it into `~/.cache/engram/tools/bin`.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// engram's topics, as the tests create them.
pub const TOPICS: [&str; 5] = [
    "engram.interactions",
    "engram.corrections",
    "engram.feedback",
    "engram.control",
    "engram.dlq",
];

pub struct Tansu {
    child: Option<Child>,
    url: String,
    /// `127.0.0.1:PORT`, for `bootstrap.servers`.
    pub brokers: String,
    /// Where a persistent broker keeps its SQLite database (topics, messages, committed
    /// offsets); `None` for the in-memory one.
    storage: Option<tempfile::TempDir>,
}

/// The `tansu` binary: `$ENGRAM_TANSU`, else the one `scripts/setup --tansu` installs.
pub fn tansu_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("ENGRAM_TANSU") {
        return p.into();
    }
    let home = std::env::var_os("HOME").expect("HOME");
    let bin = PathBuf::from(home).join(".cache/engram/tools/bin/tansu");
    assert!(
        bin.exists(),
        "{} not found: install it with `scripts/setup --tansu` (or set ENGRAM_TANSU)",
        bin.display()
    );
    bin
}

impl Tansu {
    /// Starts a broker with in-memory storage on a free loopback port and creates engram's
    /// topics with `partitions` partitions each.
    pub fn start(partitions: u32) -> Tansu {
        Self::start_on(partitions, None)
    }

    /// Like [`Tansu::start`], but the broker keeps everything in a SQLite database in a
    /// temporary folder, so that it can be stopped ([`Tansu::stop`]) and started again
    /// ([`Tansu::restart`]) on the same port with its topics, messages and offsets.
    pub fn start_persistent(partitions: u32) -> Tansu {
        Self::start_on(partitions, Some(tempfile::tempdir().unwrap()))
    }

    fn start_on(partitions: u32, storage: Option<tempfile::TempDir>) -> Tansu {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut tansu = Tansu {
            child: None,
            brokers: format!("127.0.0.1:{port}"),
            url: format!("tcp://127.0.0.1:{port}"),
            storage,
        };
        tansu.restart();
        for topic in TOPICS {
            tansu.create_topic(topic, partitions);
        }
        tansu
    }

    /// Starts the broker process (again) on its port, and waits until it listens.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "tansu is running already");
        let mut command = Command::new(tansu_bin());
        command.args([
            "broker",
            "--listener-url",
            &self.url,
            "--advertised-listener-url",
            &self.url,
        ]);
        match &self.storage {
            // sqlite://NAME is a database file NAME in the broker's working directory
            Some(dir) => command
                .current_dir(dir.path())
                .args(["--storage-engine", "sqlite://tansu.db"]),
            None => command.args(["--storage-engine", "memory://tansu/"]),
        };
        self.child = Some(
            command
                .arg("--silent")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start tansu"),
        );
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(&self.brokers).is_err() {
            assert!(
                Instant::now() < deadline,
                "tansu did not listen on {}",
                self.brokers
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the broker process (SIGKILL: a crash, or a pulled plug). Clients see their
    /// connections drop and the port refuse until [`Tansu::restart`].
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub fn create_topic(&self, name: &str, partitions: u32) {
        let out = Command::new(tansu_bin())
            .args(["topic", "create", name, "--broker", &self.url])
            .args(["--partitions", &partitions.to_string()])
            .output()
            .expect("tansu topic create");
        assert!(
            out.status.success(),
            "tansu topic create {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Tansu {
    fn drop(&mut self) {
        self.stop();
    }
}

//! A separate Kafka-protocol broker for the end-to-end and crash tests: `tansu` (the Rust
//! crate, 0.6.0, in-memory storage), started on a loopback port and killed when dropped.
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
    child: Child,
    url: String,
    /// `127.0.0.1:PORT`, for `bootstrap.servers`.
    pub brokers: String,
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
    /// Starts a broker on a free loopback port and creates engram's topics with `partitions`
    /// partitions each.
    pub fn start(partitions: u32) -> Tansu {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("tcp://127.0.0.1:{port}");
        let child = Command::new(tansu_bin())
            .args([
                "broker",
                "--listener-url",
                &url,
                "--advertised-listener-url",
                &url,
            ])
            .args(["--storage-engine", "memory://tansu/", "--silent"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start tansu");
        let tansu = Tansu {
            child,
            brokers: format!("127.0.0.1:{port}"),
            url,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(&tansu.brokers).is_err() {
            assert!(
                Instant::now() < deadline,
                "tansu did not listen on {}",
                tansu.brokers
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        for topic in TOPICS {
            tansu.create_topic(topic, partitions);
        }
        tansu
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
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

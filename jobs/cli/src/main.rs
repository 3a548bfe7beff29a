use clap::{Parser, Subcommand};
use engram_engine::{Config, Engine};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tracing_subscriber::EnvFilter;

mod mcp_stdio;

/// The dataflow's arrangements and views are many small allocations, made and freed in bursts:
/// mimalloc spends less time per allocation than glibc's malloc; with
/// [`return_freed_memory_at_once`] it also gives freed memory back to the system.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

extern "C" {
    /// mimalloc's own option setter (in the library the `mimalloc` crate links).
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
}

/// `mi_option_purge_delay` in mimalloc's `mi_option_t` (the same index in its v2 and v3).
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

/// Makes mimalloc return a page to the system as soon as it is free. By default (v3) it waits a
/// second and only purges when the thread that owns the page allocates again, so pages freed
/// by threads that then sit idle (Lance's and tokio's blocking pools, the embedder's) stayed
/// resident: under the soak's mixed load the server grew by about 300 KB per stored episode,
/// to 6.7 GiB at 18,000 episodes; with this set, 3.1 GiB, at the same CPU time per episode
/// (it still grows: docs/benchmarks.md, the soak).
fn return_freed_memory_at_once() {
    // SAFETY: sets a plain option value; called first thing in `main`, before other threads
    unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, 0) }
}

/// engram: a streaming long-term memory engine for LLM agents.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    /// TOML configuration file (every key: docs/configuration.md); `ENGRAM_*` variables and
    /// flags override it.
    #[arg(long, global = true, env = "ENGRAM_CONFIG")]
    config: Option<PathBuf>,
    /// Log as JSON lines instead of text.
    #[arg(long, global = true)]
    log_json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Send JSON-lines event files to the Kafka topics (each event to its kind's topic, keyed
    /// tenant/user; lines that are not valid events to --invalid-to, so engram rejects them to
    /// the DLQ). Brokers and topic prefix come from the configuration (`kafka.*`,
    /// `ENGRAM_KAFKA_BROKERS`) unless given here.
    Produce {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        #[arg(long)]
        brokers: Option<String>,
        /// Topic for lines that are not valid events (default: the interactions topic).
        #[arg(long)]
        invalid_to: Option<String>,
    },
    /// Run the main job: ingest from the embedded log, maintain the views, store episodes in
    /// Lance, and serve the HTTP API.
    Serve {
        /// Data folder (embedded log, reject log, Lance datasets).
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// HTTP listen address.
        #[arg(long)]
        http_addr: Option<SocketAddr>,
        /// Timely worker threads.
        #[arg(long)]
        workers: Option<usize>,
        /// Do not load the bundled demo conversation.
        #[arg(long)]
        no_demo: bool,
        /// What moves engine time, by which preferences decay: `wall` or `events` (the latest
        /// event time read).
        #[arg(long)]
        clock: Option<engram_dataflows::EngineClock>,
    },
    /// Replay historical event files (JSON lines, or Parquet with the same columns) through the
    /// same path as live input into the data folder. Resumable: run it again after an
    /// interruption and it stores what is missing, nothing twice.
    Replay {
        /// Event files, replayed in the order given.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Data folder (embedded log, reject log, Lance datasets).
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// Timely worker threads.
        #[arg(long)]
        workers: Option<usize>,
        /// No progress bars (a log line every 10 s instead when not on a terminal).
        #[arg(long)]
        no_progress: bool,
        /// Texts of the replay the bare embedder is timed on at the end (0: skip).
        #[arg(long, default_value_t = 512)]
        measure_sample: usize,
        /// Also write the summary as JSON to this file.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Ask the enrichment model (an OpenAI-compatible server: `--url` or `enrich.url`)
    /// about every session in the data folder's log it has not read yet, publish what it finds
    /// (summaries, relations, stated preferences) as events, and exit. Resumable and
    /// idempotent; `serve` does the same as turns arrive while a model server is configured.
    Enrich {
        /// Data folder.
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// The model server's base URL (overrides `enrich.url`).
        #[arg(long)]
        url: Option<String>,
        /// The model to ask (overrides `enrich.model`).
        #[arg(long)]
        model: Option<String>,
    },
    /// Print the effective configuration (file + environment) as TOML, secrets redacted;
    /// `config reference` prints every key with its default instead (docs/configuration.md).
    Config {
        #[command(subcommand)]
        action: Option<ConfigCommand>,
    },
    /// Tenants and their API keys (kept in DATA_DIR/tenants.json; a running server picks up
    /// changes at once).
    Tenant {
        /// Data folder.
        #[arg(long, global = true)]
        data_dir: Option<PathBuf>,
        #[command(subcommand)]
        action: TenantCommand,
    },
    /// The embedded event log file: `check` reports bad bytes (a torn tail, or a corrupt
    /// record with valid records after it, which stops `serve`); `repair` (engram stopped)
    /// moves them to DATA_DIR/log/quarantine/ and cuts the log there. Prints JSON; `check`
    /// exits with 1 when it finds a corrupt record.
    Log {
        /// Data folder.
        #[arg(long, global = true)]
        data_dir: Option<PathBuf>,
        #[command(subcommand)]
        action: LogCommand,
    },
    /// Offline benchmarks.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Speak MCP over stdin/stdout (for desktop agents: Claude Desktop, IDEs), relaying every
    /// message to the MCP server of a running engram (`POST <url>/mcp`) with a tenant's key.
    Mcp {
        /// Base URL of the running engram (default: the configured `http_addr`).
        #[arg(long, env = "ENGRAM_URL")]
        url: Option<String>,
        /// The tenant's API key (`engram tenant key <tenant>`).
        #[arg(long, env = "ENGRAM_API_KEY", hide_env_values = true)]
        api_key: String,
    },
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Every key of the configuration file with its default, its `ENGRAM_*` variable and what
    /// it does, as markdown: docs/configuration.md is this output.
    Reference,
}

#[derive(Subcommand)]
enum LogCommand {
    /// Report what a repair would set aside; changes nothing.
    Check,
    /// Move the bad bytes (the corrupt record and everything after it) to a quarantine file,
    /// synced, and cut the log there. Records the Lance events table holds come back from it
    /// on the next start.
    Repair,
}

#[derive(Subcommand)]
enum TenantCommand {
    /// Create a tenant and print its first API key (shown this once; only a digest is kept).
    Create { tenant: String },
    /// Issue another key for a tenant (to rotate: issue, switch clients over, revoke the old).
    Key { tenant: String },
    /// Revoke a key by its id (as `list` shows it) or the key itself.
    Revoke { tenant: String, key_id: String },
    /// List tenants and their key ids.
    List,
}

#[derive(Subcommand)]
enum BenchCommand {
    /// LongMemEval retrieval: ingest each question's haystack as one user's memory, recall for
    /// the question, and report the official retrieval metrics (session and turn level).
    Longmemeval {
        /// A LongMemEval JSON file (e.g. ../shared/longmemeval/longmemeval_s_dev.json).
        #[arg(long)]
        data: PathBuf,
        /// Also write the metrics as JSON to this file.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Only N (non-abstention) questions, evenly spaced through the file.
        #[arg(long)]
        limit: Option<usize>,
        /// Keep the ingested memory here (reruns reuse it instead of ingesting again).
        #[arg(long)]
        work_dir: Option<PathBuf>,
        /// Write each question's candidates and gold ids as JSON lines (error analysis).
        #[arg(long)]
        dump: Option<PathBuf>,
        /// Also answer each question with an OpenAI-compatible chat server at this URL (vLLM,
        /// llama.cpp, Ollama) and write `{question_id, hypothesis}` JSON lines to --answers.
        #[arg(long, requires = "answers")]
        llm: Option<String>,
        /// Model name to ask the --llm server for.
        #[arg(long, default_value = "Qwen/Qwen3-8B")]
        llm_model: String,
        /// Where the --llm answers go (the official judge's input format).
        #[arg(long)]
        answers: Option<PathBuf>,
        /// Characters of recalled memory in each --llm prompt.
        #[arg(long, default_value_t = 16_000)]
        context_chars: usize,
    },
    /// LoCoMo turn-level retrieval: each conversation is one user's memory, each question of
    /// categories 1–4 one recall as `POST /v1/recall` performs it; recall_any/all@{5,10,50}
    /// overall and per category.
    Locomo {
        /// A LoCoMo JSON file (e.g. ../shared/locomo/locomo_dev.json).
        #[arg(long)]
        data: PathBuf,
        /// Also write the metrics as JSON to this file.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Write each question's k = 50 results and evidence ids as JSON lines (error analysis).
        #[arg(long)]
        dump: Option<PathBuf>,
        /// Results per question in --dump: 50 by default; at least a conversation's turns
        /// (e.g. 1000) dumps every turn scored, as `bench/rescore_dumps.py` needs.
        #[arg(long, default_value_t = 50, requires = "dump")]
        dump_k: usize,
    },
}

fn main() -> anyhow::Result<()> {
    return_freed_memory_at_once();
    let cli = Cli::parse();
    if let Command::Mcp { .. } = cli.command {
        mcp_stdio::init_logging(cli.log_json);
    } else {
        init_logging(cli.log_json);
    }
    let mut config = Config::load(cli.config.as_deref())?;
    match cli.command {
        Command::Config { action: None } => {
            if config.admin_key.is_some() {
                config.admin_key = Some("(redacted)".into());
            }
            print!("{}", toml::to_string_pretty(&config)?);
            Ok(())
        }
        Command::Config {
            action: Some(ConfigCommand::Reference),
        } => {
            print!("{}", engram_engine::config_reference::markdown());
            Ok(())
        }
        Command::Log { data_dir, action } => log_command(config, data_dir, action),
        Command::Tenant { data_dir, action } => tenant_command(config, data_dir, action),
        Command::Bench(bench) => bench_command(config, bench),
        Command::Mcp { url, api_key } => {
            let url = url.unwrap_or_else(|| mcp_stdio::default_url(config.http_addr));
            runtime(&config)?.block_on(mcp_stdio::run(&url, api_key))
        }
        Command::Produce {
            files,
            brokers,
            invalid_to,
        } => {
            if let Some(b) = brokers {
                config.kafka.brokers = b;
            }
            anyhow::ensure!(
                !config.kafka.brokers.is_empty(),
                "no Kafka brokers: pass --brokers or set ENGRAM_KAFKA_BROKERS"
            );
            let report =
                runtime(&config)?.block_on(engram_engine::ingest::kafka::produce_files(
                    &config.kafka,
                    &files,
                    invalid_to.as_deref(),
                ))?;
            println!("{}", serde_json::to_string(&report)?);
            Ok(())
        }
        Command::Replay {
            files,
            data_dir,
            workers,
            no_progress,
            measure_sample,
            json,
        } => {
            if let Some(d) = data_dir {
                config.data_dir = d;
            }
            if let Some(w) = workers {
                config.workers = w;
            }
            config.demo = false;
            // a replay decays memories by the events' own time, so it is deterministic
            config.clock = engram_dataflows::EngineClock::Events;
            runtime(&config)?.block_on(replay(
                config,
                engram_engine::replay::ReplayOptions {
                    files,
                    measure_sample,
                    progress: !no_progress,
                    ..Default::default()
                },
                json,
            ))
        }
        Command::Enrich {
            data_dir,
            url,
            model,
        } => {
            if let Some(d) = data_dir {
                config.data_dir = d;
            }
            if url.is_some() {
                config.enrich.url = url;
            }
            if model.is_some() {
                config.enrich.model = model;
            }
            config.demo = false;
            runtime(&config)?.block_on(enrich_backlog(config))
        }
        Command::Serve {
            data_dir,
            http_addr,
            workers,
            no_demo,
            clock,
        } => {
            if let Some(c) = clock {
                config.clock = c;
            }
            if let Some(d) = data_dir {
                config.data_dir = d;
            }
            if let Some(a) = http_addr {
                config.http_addr = a;
            }
            if let Some(w) = workers {
                config.workers = w;
            }
            if no_demo {
                config.demo = false;
            }
            runtime(&config)?.block_on(serve(config))
        }
    }
}

/// `engram enrich`: the engine without its own enrichment job, and the job over the backlog.
async fn enrich_backlog(config: Config) -> anyhow::Result<()> {
    use engram_engine::enrich::job::{EnrichJob, Mode};
    let job_config = config.clone();
    let mut engine_config = config;
    engine_config.enrich.enabled = false;
    let engine = engram_engine::Engine::start(engine_config).await?;
    let stats = engine.enrich_stats.clone();
    let job = EnrichJob::new(&job_config, engine.ingestor.clone(), stats.clone())?
        .ok_or_else(|| {
            anyhow::anyhow!(
                "enrichment is off: it needs a model server (--url, enrich.url or ENGRAM_ENRICH_URL) and enrich.enabled"
            )
        })?;
    let (_keep_running, running) = tokio::sync::watch::channel(false);
    let outcome = job.run(Mode::Backlog, running).await;
    engine.wait_caught_up().await;
    engine.stop().await?;
    outcome?;
    let report: serde_json::Map<String, serde_json::Value> = stats
        .metrics()
        .into_iter()
        .map(|(name, _, value)| {
            (
                name.trim_start_matches("engram_enrich_").to_string(),
                value.into(),
            )
        })
        .collect();
    println!("{}", serde_json::Value::Object(report));
    Ok(())
}

/// Logs as text, or JSON lines, filtered by `ENGRAM_LOG` (default: info, Lance and DataFusion
/// at warn).
fn init_logging(json: bool) {
    let filter = EnvFilter::try_from_env("ENGRAM_LOG")
        .unwrap_or_else(|_| EnvFilter::new("info,lance=warn,datafusion=warn"));
    if json {
        tracing_subscriber::fmt()
            .json()
            .with_env_filter(filter)
            .init();
    } else {
        tracing_subscriber::fmt().with_env_filter(filter).init();
    }
}

/// `engram log check|repair`: prints the report; exits 1 when the log holds a corruption that
/// was not quarantined.
fn log_command(
    mut config: Config,
    data_dir: Option<PathBuf>,
    action: LogCommand,
) -> anyhow::Result<()> {
    if let Some(d) = data_dir {
        config.data_dir = d;
    }
    let dir = config.log_dir();
    let report = match action {
        LogCommand::Check => engram_connectors::event_log_check::check(&dir)?,
        LogCommand::Repair => engram_connectors::event_log_check::repair(&dir)?,
    };
    println!("{}", serde_json::to_string_pretty(&report)?);
    if report.corruption.is_some() && report.quarantined_to.is_none() {
        std::process::exit(1);
    }
    Ok(())
}

/// `engram tenant create|key|revoke|list`.
fn tenant_command(
    mut config: Config,
    data_dir: Option<PathBuf>,
    action: TenantCommand,
) -> anyhow::Result<()> {
    if let Some(d) = data_dir {
        config.data_dir = d;
    }
    let registry = engram_engine::tenants::TenantRegistry::open(&config.data_dir)?;
    match action {
        TenantCommand::Create { tenant } => println!("{}", registry.create(&tenant)?),
        TenantCommand::Key { tenant } => println!("{}", registry.issue_key(&tenant)?),
        TenantCommand::Revoke { tenant, key_id } => registry.revoke_key(&tenant, &key_id)?,
        TenantCommand::List => {
            for (name, t) in registry.list() {
                let ids: Vec<_> = t.keys.iter().map(|k| k.id.as_str()).collect();
                println!("{name}\tcreated {}\tkeys {}", t.created, ids.join(" "));
            }
        }
    }
    Ok(())
}

/// `engram bench longmemeval|locomo`.
fn bench_command(config: Config, bench: BenchCommand) -> anyhow::Result<()> {
    match bench {
        BenchCommand::Longmemeval {
            data,
            json,
            limit,
            work_dir,
            dump,
            llm,
            llm_model,
            answers,
            context_chars,
        } => runtime(&config)?.block_on(engram_engine::longmemeval::run(
            config,
            engram_engine::longmemeval::BenchOptions {
                data,
                json,
                limit,
                work_dir,
                dump,
                llm: llm.map(|url| engram_engine::longmemeval::LlmOptions {
                    url,
                    model: llm_model,
                    answers: answers.expect("clap requires --answers with --llm"),
                    context_chars,
                }),
            },
        )),
        BenchCommand::Locomo {
            data,
            json,
            dump,
            dump_k,
        } => runtime(&config)?.block_on(engram_engine::locomo::run(
            config,
            engram_engine::locomo::BenchOptions {
                data,
                json,
                dump,
                dump_k,
            },
        )),
    }
}

/// A multi-threaded runtime whose blocking pool keeps at most `config.blocking_threads` threads
/// (with tokio's 512 an idle pool held on to memory).
fn runtime(config: &Config) -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .max_blocking_threads(config.blocking_threads)
        .enable_all()
        .build()
}

async fn serve(config: Config) -> anyhow::Result<()> {
    let addr = config.http_addr;
    let kafka_config = config.kafka.clone();
    let engine = Engine::start(config).await?;
    let kafka_stop = Arc::new(AtomicBool::new(false));
    let kafka = (!kafka_config.brokers.is_empty()).then(|| {
        let (sink, stop) = (engine.kafka_sink(), kafka_stop.clone());
        let members = engine.config.workers;
        tokio::spawn(async move {
            if let Err(err) =
                engram_engine::ingest::kafka::run_kafka_source(kafka_config, sink, members, stop)
                    .await
            {
                tracing::error!(%err, "the Kafka source stopped");
            }
        })
    });
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    tracing::info!(addr = %local, "engram listening");
    // Tests and scripts read this line to find the port when started with port 0.
    println!("engram listening on http://{local}");
    let closing = engine.clone();
    // header-read timeout and connection cap ([limits]); shuts down gracefully on Ctrl-C
    let limits = engram_server::listener::ConnectionLimits::from_config(&engine.config.limits);
    let router = engram_server::router(engine.clone());
    engram_server::listener::serve_bounded(listener, router, limits, async move {
        let _ = tokio::signal::ctrl_c().await;
        tracing::info!("shutting down");
        closing.begin_closing();
    })
    .await?;
    kafka_stop.store(true, Ordering::Release);
    if let Some(kafka) = kafka {
        kafka.await?;
    }
    engine.stop().await?;
    Ok(())
}

async fn replay(
    mut config: Config,
    opts: engram_engine::replay::ReplayOptions,
    json: Option<PathBuf>,
) -> anyhow::Result<()> {
    // Each distinct text is embedded once per run (histories repeat texts).
    let mut emb = config.embedder_config();
    emb.cache_entries = emb.cache_entries.max(200_000);
    config.embedder = Some(emb);
    let engine = Engine::start(config).await?;
    let result = engram_engine::replay::run(engine.clone(), opts).await;
    engine.stop().await?;
    let s = result?;
    println!(
        "replayed {} records from {} file(s) in {:.1} s: {} accepted, {} accepted before, {} rejected",
        s.records, s.files, s.seconds, s.accepted, s.duplicates, s.rejected
    );
    for r in &s.rejections {
        println!(
            "  rejected {} {}: {}: {}",
            r.file, r.position, r.field, r.reason
        );
    }
    println!(
        "episodes stored: {} ({:.1}/s); texts through the model: {}",
        s.episodes_stored, s.episodes_per_second, s.texts_embedded
    );
    if let (Some(bare), Some(ratio), Some(n)) = (
        s.bare_embedder_episodes_per_second,
        s.ratio_to_bare_embedder,
        s.sample_episodes,
    ) {
        println!(
            "bare embedder on {n} of the same episodes: {bare:.1} episodes/s; replay at {:.0}% of it",
            ratio * 100.0
        );
    }
    if let Some(path) = json {
        std::fs::write(&path, serde_json::to_vec_pretty(&s)?)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::return_freed_memory_at_once;

    fn resident_kib() -> u64 {
        std::fs::read_to_string("/proc/self/status")
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    }

    /// Memory a thread allocates and frees, and that thread then idles (as pool threads do),
    /// goes back to the system: 256 MiB in 1 KiB blocks leave at most 64 MiB resident.
    #[test]
    fn memory_freed_by_a_thread_that_then_idles_goes_back_to_the_system() {
        return_freed_memory_at_once();
        let before = resident_kib();
        let (freed_tx, freed) = std::sync::mpsc::channel();
        let (end, end_rx) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let blocks: Vec<Vec<u8>> = (0..262_144).map(|i| vec![i as u8; 1024]).collect();
            drop(blocks);
            freed_tx.send(()).unwrap();
            let _ = end_rx.recv();
        });
        freed.recv().unwrap();
        let after = resident_kib();
        end.send(()).unwrap();
        thread.join().unwrap();
        assert!(
            after < before + 64 * 1024,
            "{} MiB still resident of 256 MiB freed",
            (after.saturating_sub(before)) / 1024
        );
    }
}

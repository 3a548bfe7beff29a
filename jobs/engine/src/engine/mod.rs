//! `engram serve` without the HTTP: opens the log, the Lance store and the embedder, starts the
//! memory dataflow and the episode writer, and loads the demo conversation. Export and erase
//! ([`gdpr`]) and the health sampler ([`health`]) are operations of the running engine.

pub mod answers;
pub mod gdpr;
pub mod health;
pub mod memory_edits;
pub mod tenant_status;

use crate::config::Config;
use crate::ingest::log_source::{LogSource, PipelineFailures};
use crate::ingest::Ingestor;
use crate::pipeline::archiver::{attach_archive, spawn_event_archiver, Discard};
use crate::pipeline::episode_writer::{spawn_episode_writer, PassageSink, SideTables};
use crate::query::recall::Recall;
use crate::tenants::TenantRegistry;
use anyhow::Context;
use engram_connectors::{
    Embedder, EpisodeStore, EventLog, EventTable, IndexPolicy, RejectLimits, RejectLog,
};
use engram_dataflows::{run_memory_dataflow, DataflowHandle, InputSource, SharedViews};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The bundled demo conversation (JSON lines in the event format).
pub const DEMO_EVENTS: &str = include_str!("../../demo/conversation.jsonl");

pub struct Engine {
    pub config: Config,
    pub ingestor: Arc<Ingestor>,
    pub store: Arc<EpisodeStore>,
    /// Every accepted event, in Lance (the log is its write-ahead buffer).
    pub events: Arc<EventTable>,
    pub views: Arc<SharedViews>,
    pub recall: Recall,
    pub tenants: Arc<TenantRegistry>,
    /// Each tenant's rate limits (`[limits]`), one set of buckets for every route: HTTP
    /// refuses with `429`, Kafka holds the tenant's messages until they are admitted.
    pub tenant_limits: Arc<crate::tenant_limits::TenantLimits>,
    /// The Qwen3 chat template and tokenizer, or why they could not be loaded (prompts are
    /// then refused with that reason; everything else works).
    pub chat_template: Result<Arc<engram_connectors::chat_template::Qwen3Chat>, String>,
    /// The chat server `/v1/chat` forwards to, when configured.
    pub llm: Option<crate::llm::ChatClient>,
    /// What the enrichment job ([`crate::enrich`]) has done (zeros while it is off).
    pub enrich_stats: Arc<crate::enrich::EnrichStats>,
    dataflow: Mutex<Option<DataflowHandle>>,
    writer: Mutex<Option<std::thread::JoinHandle<()>>>,
    archiver: Mutex<Option<std::thread::JoinHandle<()>>>,
    stop: Arc<AtomicBool>,
    started: std::time::Instant,
    /// Rows of the episode store when it was opened, before the writer stored anything (the
    /// episodes an interrupted run logged but had not stored yet are stored after this).
    pub episodes_at_open: usize,
    /// Set when the server begins to shut down: long-lived responses (the dashboard stream)
    /// end then, so the graceful shutdown does not wait for them.
    closing: tokio::sync::watch::Sender<bool>,
    /// Pipeline health, sampled once a second for the dashboards that follow it
    /// ([`health`]); `None` until the first sample.
    pub health: tokio::sync::watch::Sender<Option<Arc<serde_json::Value>>>,
    /// Input the pipeline could not use (each is also logged).
    pub failures: Arc<PipelineFailures>,
    /// What the erasure task ([`gdpr::run_erasures`]) made of each erase event.
    erasures: tokio::sync::watch::Sender<gdpr::ErasureOutcomes>,
}

#[derive(Debug, Serialize)]
pub struct Status {
    /// Offset the next accepted event will get.
    pub log_end: u64,
    /// All input below this offset is reflected in the views.
    pub views_as_of: u64,
    /// Highest offset committed to Lance (`null` before the first episode).
    pub lance_watermark: Option<u64>,
    /// Events below this offset are in the Lance events table.
    pub events_in_lance: u64,
    /// Episodes committed to Lance.
    pub episodes: usize,
    /// Episodes in the views that are not yet committed to Lance.
    pub pending_episodes: usize,
    /// Events accepted and not yet recallable, and the push-back on writers.
    pub backlog: crate::ingest::backlog::BacklogStatus,
    pub rejected: u64,
    pub indexes: Vec<IndexStatus>,
    pub unindexed_rows: usize,
    pub uptime_seconds: f64,
    /// Input the pipeline could not use.
    pub failures: FailureCounts,
    /// Bytes control events read since the start: `log`, of event-log records (the erasure
    /// task and every worker's re-reads on an erase, restrict or unrestrict, and exports of
    /// restricted users); `rejects`, of reject files rewritten by erasures. An erase of someone
    /// with no data reads 0 of both.
    pub control_bytes_read: ControlBytesRead,
}

/// See [`Status::control_bytes_read`].
#[derive(Debug, Serialize)]
pub struct ControlBytesRead {
    pub log: u64,
    pub rejects: u64,
}

/// [`PipelineFailures`] as counted so far.
#[derive(Debug, Serialize)]
pub struct FailureCounts {
    /// Corrections whose embedding failed (they are not clustered).
    pub corrections_not_embedded: u64,
    /// Event-log records that could not be read (skipped).
    pub unreadable_records: u64,
}

/// The log end and how far the views and Lance have got.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub log_end: u64,
    pub views_as_of: u64,
    pub lance_watermark: Option<u64>,
    pub episodes: usize,
    pub pending_episodes: usize,
}

impl Progress {
    pub fn caught_up(&self) -> bool {
        self.views_as_of >= self.log_end && self.pending_episodes == 0
    }
}

#[derive(Debug, Serialize)]
pub struct IndexStatus {
    pub name: String,
    pub indexed_rows: usize,
}

impl Engine {
    /// Must be called from inside a tokio runtime.
    pub async fn start(config: Config) -> anyhow::Result<Arc<Engine>> {
        let (log, events, ingestor) = open_log_and_ingestor(&config).await?;

        let emb_cfg = config.embedder_config();
        let embedder = {
            let cfg = emb_cfg.clone();
            tokio::task::spawn_blocking(move || Embedder::load(&cfg))
                .await?
                .context("loading the embedder (did the set-up script run? see README)")?
        };
        let embedder = Arc::new(embedder);
        tracing::info!(dim = embedder.dim(), model = %emb_cfg.model.display(), "embedder loaded");

        let Stores {
            store,
            passages,
            facts,
            summaries,
        } = open_stores(&config, embedder.dim(), log.end_offset()).await?;
        let episodes_at_open = store.row_count();

        let views = Arc::new(SharedViews::default());
        let (tx, rx) = std::sync::mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let writer = spawn_episode_writer(
            rx,
            store.clone(),
            passages.clone().map(|store| {
                Arc::new(PassageSink {
                    store,
                    roles: config.passages.roles.clone(),
                    max_per_episode: config.passages.max_per_episode,
                })
            }),
            SideTables {
                facts: Some(facts.clone()),
                summaries: Some(summaries.clone()),
            },
            embedder.clone(),
            tokio::runtime::Handle::current(),
            stop.clone(),
            ingestor.backlog().clone(),
        );
        let discard = (config.log.discard_after_bytes > 0).then(|| {
            let views = views.clone();
            Discard {
                after_bytes: config.log.discard_after_bytes,
                read_up_to: Arc::new(move || views.read().as_of),
            }
        });
        let archiver = spawn_event_archiver(
            log.clone(),
            events.clone(),
            discard,
            tokio::runtime::Handle::current(),
            stop.clone(),
        );
        let source_log = log.clone();
        let source_embedder = embedder.clone();
        let failures = Arc::new(PipelineFailures::default());
        let source_failures = failures.clone();
        let source_offsets = ingestor.user_offsets().clone();
        let fusion = config.fusion.confidence();
        let dataflow = run_memory_dataflow(
            config.workers,
            move |index, peers| {
                Box::new(
                    LogSource::new(
                        source_log.clone(),
                        Some(source_embedder.clone()),
                        index,
                        peers,
                    )
                    .with_failures(source_failures.clone())
                    .with_user_offsets(source_offsets.clone())
                    .with_fusion(fusion),
                ) as Box<dyn InputSource>
            },
            config.clock,
            engram_dataflows::DataflowParams {
                hierarchy: config.hierarchy,
                skills: config.skills,
                retention: config.retention,
                corrections: engram_dataflows::CorrectionParams {
                    link_cosine: config.embedder_config().correction_link_cosine,
                    topic_link_cosine: config.embedder_config().correction_topic_link_cosine,
                },
            },
            views.clone(),
            tx,
        )
        .map_err(|e| anyhow::anyhow!("starting the timely workers: {e}"))?;

        let tenants = Arc::new(TenantRegistry::open(&config.data_dir)?);
        let known = tenants.clone();
        ingestor
            .rejects()
            .set_known_tenants(Box::new(move |t| known.contains(t)));
        let chat_template = load_chat_template(config.models_dir.clone()).await?;
        let llm = llm_client(&config)?;
        let recall = Recall {
            store: store.clone(),
            passages,
            facts: Some(facts),
            summaries: Some(summaries),
            embedder,
            views: views.clone(),
            config: config.recall.clone(),
            speakers: Default::default(),
            analysed: Default::default(),
            embedding_calls: Default::default(),
        };
        let engine = Arc::new(Engine {
            ingestor,
            store,
            events,
            views,
            recall,
            tenants,
            tenant_limits: Arc::new(crate::tenant_limits::TenantLimits::from_config(
                &config.limits,
            )),
            chat_template,
            llm,
            enrich_stats: Default::default(),
            dataflow: Mutex::new(Some(dataflow)),
            writer: Mutex::new(Some(writer)),
            archiver: Mutex::new(Some(archiver)),
            stop,
            started: std::time::Instant::now(),
            episodes_at_open,
            closing: tokio::sync::watch::channel(false).0,
            health: tokio::sync::watch::channel(None).0,
            failures,
            erasures: tokio::sync::watch::channel(Default::default()).0,
            config,
        });
        health::spawn_health_sampler(&engine);
        if engine.config.demo {
            engine.load_demo()?;
        }
        // Erase events, however they arrive, and those a crash interrupted, are completed by
        // one task.
        tokio::spawn(gdpr::run_erasures(Arc::downgrade(&engine)));
        engine.spawn_enrichment()?;
        Ok(engine)
    }

    /// Starts the enrichment job when a model server is configured for it; it stops when the
    /// engine begins to close.
    fn spawn_enrichment(&self) -> anyhow::Result<()> {
        use crate::enrich::job::{EnrichJob, Mode};
        let (config, ingestor, stats) = (
            self.config.clone(),
            self.ingestor.clone(),
            self.enrich_stats.clone(),
        );
        // the prompt files are read now: a mistake in them stops the start, with the reason
        let Some(mut job) = EnrichJob::new(&config, ingestor.clone(), stats.clone())? else {
            return Ok(());
        };
        let stop = self.closing();
        tokio::spawn(async move {
            // an error (a log it cannot read, a state it cannot save: a full disk) stops one
            // run; the job starts again from its saved state, waiting longer each time
            let mut wait = std::time::Duration::from_secs(5);
            loop {
                stats.running.store(1, std::sync::atomic::Ordering::Relaxed);
                let outcome = job.run(Mode::Follow, stop.clone()).await;
                stats.running.store(0, std::sync::atomic::Ordering::Relaxed);
                match outcome {
                    Ok(()) => return, // the engine is closing
                    Err(e) => tracing::error!(error = %e, retry_in_secs = wait.as_secs(),
                        "the enrichment job stopped; it starts again"),
                }
                let mut closing = stop.clone();
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = closing.changed() => return,
                }
                wait = (wait * 2).min(std::time::Duration::from_secs(600));
                match EnrichJob::new(&config, ingestor.clone(), stats.clone()) {
                    Ok(Some(next)) => job = next,
                    _ => return,
                }
            }
        });
        Ok(())
    }

    /// What a Kafka source feeds ([`crate::ingest::kafka::run_kafka_source`]).
    pub fn kafka_sink(&self) -> crate::ingest::kafka::KafkaSink {
        crate::ingest::kafka::KafkaSink {
            ingestor: self.ingestor.clone(),
            events: self.events.clone(),
            tenants: self.tenants.clone(),
            limits: self.tenant_limits.clone(),
        }
    }

    /// Where the demo tenant's API key is kept (created on the first start with the demo).
    pub fn demo_key_file(&self) -> std::path::PathBuf {
        self.config.data_dir.join("demo-api-key")
    }

    /// Ingests the demo conversation (its fixed event ids make this a no-op after the first
    /// time) and makes sure the `demo` tenant has a key in [`Engine::demo_key_file`].
    fn load_demo(&self) -> anyhow::Result<()> {
        self.tenants
            .ensure_key_file("demo", &self.demo_key_file())?;
        tracing::info!(key_file = %self.demo_key_file().display(), "the demo tenant's API key");
        let items: Vec<serde_json::Value> = DEMO_EVENTS
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(serde_json::from_str)
            .collect::<Result<_, _>>()
            .context("the bundled demo conversation is not valid JSON lines")?;
        let body = serde_json::to_vec(&items)?;
        let report = self.ingestor.ingest_body("demo", &body)?;
        anyhow::ensure!(
            report.rejected.is_empty(),
            "demo events rejected: {:?}",
            report.rejected
        );
        tracing::info!(
            accepted = report.accepted,
            duplicates = report.duplicates,
            "demo conversation loaded"
        );
        Ok(())
    }

    /// How far the views and Lance are behind the log (cheap: no Lance call).
    pub fn progress(&self) -> Progress {
        let (views_as_of, views_episodes) = {
            let v = self.views.read();
            (v.as_of, v.session_sizes.values().sum::<usize>())
        };
        let episodes = self.store.row_count();
        Progress {
            log_end: self.ingestor.log().end_offset(),
            views_as_of,
            lance_watermark: self.store.watermark(),
            episodes,
            pending_episodes: views_episodes.saturating_sub(episodes),
        }
    }

    /// Waits until everything in the log is in the views and in Lance.
    pub async fn wait_caught_up(&self) {
        while !self.progress().caught_up() {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }

    pub async fn status(&self) -> Status {
        let (indexes, unindexed_rows) = self.store.index_status().await.unwrap_or_default();
        let p = self.progress();
        Status {
            log_end: p.log_end,
            views_as_of: p.views_as_of,
            lance_watermark: p.lance_watermark,
            events_in_lance: self.events.end(),
            episodes: p.episodes,
            pending_episodes: p.pending_episodes,
            backlog: self.ingestor.backlog().status(),
            rejected: self.ingestor.rejects().count(),
            indexes: indexes
                .into_iter()
                .map(|(name, indexed_rows)| IndexStatus { name, indexed_rows })
                .collect(),
            unindexed_rows,
            uptime_seconds: self.started.elapsed().as_secs_f64(),
            failures: FailureCounts {
                corrections_not_embedded: self
                    .failures
                    .corrections_not_embedded
                    .load(Ordering::Relaxed),
                unreadable_records: self.failures.unreadable_records.load(Ordering::Relaxed),
            },
            control_bytes_read: ControlBytesRead {
                log: self.ingestor.user_offsets().bytes_read(),
                rejects: self.ingestor.rejects().erase_bytes_read(),
            },
        }
    }

    /// Tells long-lived responses to end: the server is shutting down.
    pub fn begin_closing(&self) {
        self.closing.send_replace(true);
    }

    /// Changes to `true` when [`Engine::begin_closing`] is called.
    pub fn closing(&self) -> tokio::sync::watch::Receiver<bool> {
        self.closing.subscribe()
    }

    /// [`Engine::shutdown`] from async code (it blocks while the threads finish), on a thread
    /// of its own: the writer and archiver it joins need the blocking pool for their last
    /// Lance commits, which a pool of one thread held by this wait could never give them.
    pub async fn stop(self: &Arc<Self>) -> anyhow::Result<()> {
        let engine = self.clone();
        let (done, finished) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name("engram-shutdown".into())
            .spawn(move || {
                engine.shutdown();
                let _ = done.send(());
            })?;
        finished.await?;
        Ok(())
    }

    /// Stops the dataflow and the writer (whatever is durable in the log is picked up again on
    /// the next start).
    pub fn shutdown(&self) {
        // the enrichment job and long-lived responses end with it
        self.begin_closing();
        self.stop.store(true, Ordering::Release);
        if let Some(d) = self.dataflow.lock().unwrap().take() {
            d.stop();
        }
        if let Some(w) = self.writer.lock().unwrap().take() {
            let _ = w.join();
        }
        if let Some(a) = self.archiver.lock().unwrap().take() {
            let _ = a.join();
        }
    }
}

/// The stores [`Engine::start`] opens beside the episodes.
struct Stores {
    store: Arc<EpisodeStore>,
    passages: Option<Arc<EpisodeStore>>,
    facts: Arc<EpisodeStore>,
    summaries: Arc<EpisodeStore>,
}

/// Opens the Lance stores of episodes (and starts loading their vectors into memory),
/// passages (when on), facts and summaries.
async fn open_stores(config: &Config, dim: usize, log_end: u64) -> anyhow::Result<Stores> {
    let store =
        Arc::new(EpisodeStore::open(&config.episodes_dir(), dim, config.index.clone()).await?);
    {
        // searches load a user's vectors on demand until this has loaded them all
        let store = store.clone();
        tokio::spawn(async move {
            let started = std::time::Instant::now();
            match store.warm_vector_cache().await {
                Ok(users) => tracing::info!(
                    users,
                    seconds = started.elapsed().as_secs_f64(),
                    "episode vectors loaded into memory"
                ),
                Err(e) => {
                    tracing::warn!(error = %e, "loading episode vectors into memory failed; searches load them as needed")
                }
            }
        });
    }
    tracing::info!(rows = store.row_count(), watermark = ?store.watermark(), log_end,
        "episode store opened");
    let passages = if config.passages.enabled {
        let p = Arc::new(
            EpisodeStore::open(
                &config.passages_dir(),
                dim,
                IndexPolicy {
                    full_text: false, // passages are only searched by vector
                    ..config.index.clone()
                },
            )
            .await?,
        );
        tracing::info!(rows = p.row_count(), watermark = ?p.watermark(), "passage store opened");
        Some(p)
    } else {
        None
    };

    let facts = Arc::new(EpisodeStore::open(&config.facts_dir(), dim, config.index.clone()).await?);
    tracing::info!(rows = facts.row_count(), watermark = ?facts.watermark(), "fact store opened");
    let summaries =
        Arc::new(EpisodeStore::open(&config.summaries_dir(), dim, config.index.clone()).await?);
    tracing::info!(rows = summaries.row_count(), watermark = ?summaries.watermark(), "summary store opened");
    Ok(Stores {
        store,
        passages,
        facts,
        summaries,
    })
}

/// The Qwen3 chat template and tokenizer, or why they could not be loaded (logged).
async fn load_chat_template(
    dir: std::path::PathBuf,
) -> anyhow::Result<Result<Arc<engram_connectors::chat_template::Qwen3Chat>, String>> {
    let loaded = tokio::task::spawn_blocking(move || {
        engram_connectors::chat_template::Qwen3Chat::from_models_dir(&dir)
    })
    .await?;
    Ok(loaded.map(Arc::new).map_err(|e| {
        tracing::warn!(err = %e, "the Qwen3 tokenizer is not loaded; prompts are refused");
        e.to_string()
    }))
}

/// The chat client of `llm.url`, when configured.
fn llm_client(config: &Config) -> anyhow::Result<Option<crate::llm::ChatClient>> {
    Ok(match &config.llm.url {
        Some(url) => Some(
            crate::llm::ChatClient::new(
                url,
                &config.llm.model,
                std::time::Duration::from_secs(config.llm.timeout_secs),
            )
            .context("the LLM client")?,
        ),
        None => None,
    })
}

/// The event log (recovered after a crash), the Lance events table behind it, and the
/// ingestor that appends to the log (with its reject log and held events).
async fn open_log_and_ingestor(
    config: &Config,
) -> anyhow::Result<(Arc<EventLog>, Arc<EventTable>, Arc<Ingestor>)> {
    let log = Arc::new(EventLog::open(&config.log_dir())?);
    if log.truncated_bytes() > 0 {
        tracing::warn!(
            bytes = log.truncated_bytes(),
            "recovered the event log after a crash"
        );
    }
    let events = Arc::new(EventTable::open(&config.events_dir()).await?);
    // The table is the store of record: the log reads below its base from it, and a log
    // that lost records the table holds continues at the table's end.
    attach_archive(&log, &events)?;
    let rejects = Arc::new(RejectLog::open_with(
        &config.log_dir(),
        RejectLimits {
            max_bytes: config.log.reject_max_bytes,
            keep_files: config.log.reject_keep_files,
        },
    )?);
    let ingestor = Ingestor::open(log.clone(), rejects, &config.held_dir())?;
    let ingestor = Arc::new(match config.log.max_future_skew_s {
        0 => ingestor,
        s => ingestor.with_max_future_skew(std::time::Duration::from_secs(s)),
    });
    ingestor
        .backlog()
        .set_limit(config.limits.max_backlog_events);
    Ok((log, events, ingestor))
}

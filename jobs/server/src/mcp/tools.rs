//! The MCP tools engram offers, as `tools/list` shows them: names, descriptions written for a
//! model choosing between them, and JSON Schemas of their arguments. What each does is in
//! [`super::calls`].

use serde_json::{json, Value};

/// The tool names, in the order `tools/list` gives them.
pub const TOOL_NAMES: [&str; 6] = [
    "remember",
    "recall",
    "build_prompt",
    "feedback",
    "memory",
    "forget",
];

/// The `user` argument every tool takes.
fn user_property() -> Value {
    json!({
        "type": "string",
        "description": "Id of the person the conversation is with (the same id in every session, so their memory follows them). 1 to 256 characters, no control characters.",
        "minLength": 1,
        "maxLength": 256
    })
}

fn remember() -> Value {
    json!({
        "name": "remember",
        "title": "Remember conversation turns, facts and corrections",
        "description": "Stores what happened in the conversation with a user so it can be recalled later: the messages (the user's and your answers), facts the user stated about themselves, and corrections the user made to an earlier answer. Give at least one of `messages`, `facts`, `corrections`. Returns the event id of each stored item (in the order given: messages, then facts, then corrections): keep the id of an answer to point a later correction or feedback at it, or to forget it. Returns once the new memories are searchable (or says they are still being indexed).",
        "inputSchema": {
            "type": "object",
            "properties": {
                "user": user_property(),
                "session": {"type": "string", "description": "Id of this conversation (default \"mcp\"). Messages of one session are remembered as one conversation."},
                "messages": {
                    "type": "array",
                    "description": "Conversation turns, oldest first.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "role": {"type": "string", "enum": ["user", "assistant", "tool"]},
                            "content": {"type": "string", "description": "The message text."},
                            "event_id": {"type": "string", "description": "Optional idempotency key: the same id sent twice is stored once."}
                        },
                        "required": ["role", "content"]
                    }
                },
                "facts": {
                    "type": "array",
                    "description": "Facts about the user as (subject, attribute, value), e.g. (\"user\", \"home city\", \"Lisbon\"). A new value of the same subject and attribute replaces the old one.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "subject": {"type": "string"},
                            "attribute": {"type": "string"},
                            "value": {"type": "string"},
                            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                            "event_id": {"type": "string"}
                        },
                        "required": ["subject", "attribute", "value"]
                    }
                },
                "corrections": {
                    "type": "array",
                    "description": "The user corrected an earlier answer: what was wrong and what they expect instead. Repeated corrections become the user's preferences.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "target_event_id": {"type": "string", "description": "Event id of the answer corrected (from an earlier `remember`)."},
                            "original": {"type": "string", "description": "The answer as it was."},
                            "corrected": {"type": "string", "description": "The answer as the user wants it."},
                            "correction_type": {"type": "string", "enum": ["CONTENT", "STYLE", "FORMAT", "TONE", "LENGTH", "OTHER"]},
                            "expected_behavior": {"type": "string", "description": "What to do from now on, in the user's terms (e.g. \"answer in bullet points\")."},
                            "context": {"type": "string", "description": "Where this applies (e.g. \"emails to clients\")."},
                            "event_id": {"type": "string"}
                        },
                        "required": ["target_event_id", "original", "correction_type"]
                    }
                }
            },
            "required": ["user"]
        },
        "annotations": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false}
    })
}

fn recall() -> Value {
    json!({
        "name": "recall",
        "title": "Recall what was said before",
        "description": "Searches one user's past conversations (by meaning and by words) for what is relevant to a question, and returns the best turns (content, role, session, time, event id), the user's facts and the summaries closest to it. Use it before answering anything that may depend on earlier conversations.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "user": user_property(),
                "query": {"type": "string", "description": "What to look for, as a question or keywords.", "minLength": 1},
                "k": {"type": "integer", "description": "How many turns to return (default 10).", "minimum": 1, "maximum": 100},
                "as_of": {"type": "string", "format": "date-time", "description": "Only memories from before this moment (RFC 3339)."},
                "include_domain": {"type": "boolean", "description": "Also search the memories shared with all users of this tenant."},
                "include_archived": {"type": "boolean", "description": "Also search archived memories: old ones no answer has used for a long time (an as_of search always includes them)."}
            },
            "required": ["user", "query"]
        },
        "annotations": {"readOnlyHint": true, "openWorldHint": false}
    })
}

fn build_prompt() -> Value {
    json!({
        "name": "build_prompt",
        "title": "Build a prompt with the user's memories",
        "description": "Assembles a complete chat prompt for answering `query` for this user: the system part with the user's preferences and the chosen skill's instructions, the relevant memories, and the recent turns of the session, within a token budget. Returns the rendered prompt, its messages, the tokens per part and where each memory came from (including the `skill_id` to give `feedback` on).",
        "inputSchema": {
            "type": "object",
            "properties": {
                "user": user_property(),
                "query": {"type": "string", "description": "The user's current message.", "minLength": 1},
                "session": {"type": "string", "description": "Id of this conversation, for its recent turns."},
                "budget_tokens": {"type": "integer", "minimum": 1, "description": "Token budget of the whole prompt (default from engram's configuration)."},
                "situation": {"type": "string", "description": "Where the answer goes, e.g. \"external client\": preferences the user contradicted there are left out."},
                "enable_thinking": {"type": "boolean", "description": "Whether the model should think before answering (default on)."}
            },
            "required": ["user", "query"]
        },
        "annotations": {"readOnlyHint": true, "openWorldHint": false}
    })
}

fn feedback() -> Value {
    json!({
        "name": "feedback",
        "title": "Thumbs up or down on an answer",
        "description": "Records the user's verdict on one of your answers: +1 (good), -1 (bad) or 0 (neutral). engram learns which skill (way of answering) works for this user in which context.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "user": user_property(),
                "message_id": {"type": "string", "description": "Event id of the answer judged (from `remember`)."},
                "skill_id": {"type": "string", "description": "The skill the answer was written with (from `build_prompt`; \"default\" if none)."},
                "reward": {"type": "integer", "enum": [-1, 0, 1]},
                "reason": {"type": "string", "description": "Why, in a few words, if the user said."},
                "free_text": {"type": "string", "description": "The user's own words about the answer."},
                "session": {"type": "string"}
            },
            "required": ["user", "message_id", "skill_id", "reward"]
        },
        "annotations": {"readOnlyHint": false, "destructiveHint": false, "openWorldHint": false}
    })
}

fn memory() -> Value {
    json!({
        "name": "memory",
        "title": "What engram knows about the user",
        "description": "Lists what engram has learned about one user: their facts (current and past values, with validity), the people, places and things they mention, their preferences (learned from corrections) and how well each skill has worked for them. Use it to see or show the user what is remembered about them.",
        "inputSchema": {
            "type": "object",
            "properties": {"user": user_property()},
            "required": ["user"]
        },
        "annotations": {"readOnlyHint": true, "openWorldHint": false}
    })
}

fn forget() -> Value {
    json!({
        "name": "forget",
        "title": "Forget one memory, or the whole user",
        "description": "Removes memories for good. With `memory_id` (an event id from `remember` or `recall`, or the id of a fact from `memory`): that one memory and everything derived from it. With `all_memories: true`: everything engram holds about the user (their right to erasure) - only when the user asks for it. Give exactly one of the two. Cannot be undone.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "user": user_property(),
                "memory_id": {"type": "string", "description": "Id of the one memory to forget.", "minLength": 1, "maxLength": 256},
                "all_memories": {"type": "boolean", "description": "true: erase everything about the user."}
            },
            "required": ["user"]
        },
        "annotations": {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": true, "openWorldHint": false}
    })
}

/// The `tools/list` entries, in [`TOOL_NAMES`] order.
pub fn definitions() -> Vec<Value> {
    vec![
        remember(),
        recall(),
        build_prompt(),
        feedback(),
        memory(),
        forget(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_a_description_and_an_object_schema_that_requires_the_user() {
        let tools = definitions();
        let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(names, TOOL_NAMES);
        for tool in &tools {
            assert!(tool["description"].as_str().unwrap().len() > 40, "{tool}");
            let schema = &tool["inputSchema"];
            assert_eq!(schema["type"], "object");
            assert!(schema["properties"]["user"].is_object());
            assert!(schema["required"]
                .as_array()
                .unwrap()
                .contains(&json!("user")));
        }
    }
}

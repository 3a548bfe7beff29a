"""The official `openai` Python client talking to engram's OpenAI-compatible endpoint.

Run by tests/tests/openai_compat.rs against a real `engram serve` (its chats answered by the
loopback stand-in model server): `python3 openai_client.py BASE_URL API_KEY`. Prints one JSON
object of what the client saw at each step (the Rust test asserts on it) and, on stderr, a
short transcript. Every step is recorded, not asserted, so that one failure shows the rest.
"""

import json
import sys

import openai

base_url, api_key = sys.argv[1], sys.argv[2]
# no retries: a refused request must surface as the exception it is, once
client = openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=60)
report = {}


def refusal(call):
    """The exception class, status and OpenAI error fields of a call that must fail."""
    try:
        call()
    except openai.APIStatusError as e:
        return {"class": type(e).__name__, "status": e.status_code, "code": e.code,
                "param": e.param, "type": e.type, "message": e.message}
    return {"class": None}


models = client.models.list()
report["models"] = [m.id for m in models.data]
model = report["models"][0]

question = "Where does my sister live?"
completion = client.chat.completions.create(
    model=model,
    messages=[
        {"role": "system", "content": "Answer in one sentence."},
        {"role": "user", "content": question},
    ],
    user="alice",
    metadata={"session": "oai1", "exchange_id": "ox1"},
    temperature=0.2,
    max_tokens=64,
)
report["completion"] = completion.model_dump()
print(f"> POST /v1/chat/completions user=alice: {question!r}", file=sys.stderr)
print(f"< {completion.choices[0].message.content!r} (id {completion.id}, "
      f"engram.message_id {completion.model_extra['engram']['message_id']})", file=sys.stderr)

follow_up = "And what is her name?"
chunks = client.chat.completions.create(
    model=model,
    messages=[
        {"role": "user", "content": question},
        {"role": "assistant", "content": completion.choices[0].message.content},
        {"role": "user", "content": follow_up},
    ],
    stream=True,
    stream_options={"include_usage": True},
    extra_headers={"X-Engram-User": "alice", "X-Engram-Session": "oai2"},
)
report["chunks"] = [chunk.model_dump() for chunk in chunks]
streamed = "".join(c["choices"][0]["delta"].get("content") or ""
                   for c in report["chunks"] if c["choices"])
print(f"> stream, X-Engram-User: alice: {follow_up!r}", file=sys.stderr)
print(f"< {len(report['chunks'])} chunks: {streamed!r}", file=sys.stderr)

ask = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
report["no_user"] = refusal(lambda: client.chat.completions.create(**ask))
report["wrong_model"] = refusal(
    lambda: client.chat.completions.create(**{**ask, "model": "gpt-none"}, user="alice"))
stranger = openai.OpenAI(base_url=base_url, api_key="not-a-key", max_retries=0, timeout=60)
report["wrong_key"] = refusal(lambda: stranger.chat.completions.create(**ask, user="alice"))
report["wrong_key_models"] = refusal(lambda: stranger.models.list())
for step in ("no_user", "wrong_model", "wrong_key"):
    r = report[step]
    print(f"{step}: {r['class']} {r.get('status')} {r.get('message')!r}", file=sys.stderr)

print(json.dumps(report))

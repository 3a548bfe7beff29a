#!/usr/bin/env python3
"""A loopback stand-in for an OpenAI-compatible model server, for measuring what the
enrichment job costs the rest of engram where no model can be served (no GPU here).

    python3 bench/stand_in_model.py [--port 0] [--delay-ms 300]

prints `listening on http://127.0.0.1:PORT/v1`, then answers every POST /v1/chat/completions
after --delay-ms (a model's time to answer) with what the enrichment prompt asks for, read from
the turns of the request (`[id] date time (weekday) speaker: text` lines): a summary naming the
first turn, a relation for each turn saying "I went to …" or "I adopted …", and a `usage`
block. It is not a model: the answers only have the right shape and size.
"""
import argparse
import json
import re
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TURN = re.compile(r"^\[(?P<id>[^\]]+)\] \S+ \S+ \(\w+\) (?P<speaker>[^:]+): (?P<text>.*)$")
EVENT = re.compile(r"\bI (went to|adopted|joined|visited|started) ([^,.!?]+)", re.IGNORECASE)


def answer(request):
    text = request["messages"][-1]["content"]
    turns = [m.groupdict() for m in map(TURN.match, text.splitlines()) if m]
    relations = []
    for t in turns:
        for verb, obj in EVENT.findall(t["text"]):
            relations.append({"subject": t["speaker"], "relation": verb.lower(),
                              "object": obj.strip(), "evidence": [t["id"]]})
    first = f'{turns[0]["speaker"]}: {turns[0]["text"]}' if turns else ""
    return {"summary": f"{len(turns)} turns, beginning with {first[:300]}",
            "relations": relations, "preferences": []}


class Handler(BaseHTTPRequestHandler):
    delay = 0.3

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path != "/v1/chat/completions":
            self.send_error(404)
            return
        request = json.loads(body)
        time.sleep(self.delay)
        content = json.dumps(answer(request))
        payload = json.dumps({
            "id": "stand-in", "object": "chat.completion",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": len(body) // 4, "completion_tokens": len(content) // 4},
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay-ms", type=float, default=300)
    args = parser.parse_args()
    Handler.delay = args.delay_ms / 1000
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(f"listening on http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()

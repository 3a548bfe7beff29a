"""Remember a short conversation, then recall it and build a prompt with it.

    ENGRAM_URL=http://127.0.0.1:8687 ENGRAM_API_KEY=engram_… python remember_and_recall.py
"""

import time

from engram_client import Engram

with Engram() as engram:
    engram.remember("alice", "trip-planning", [
        {"role": "user",
         "content": "My sister Ana moved to Lisbon last spring; she teaches piano."},
        {"role": "assistant", "content": "How nice! Are you planning to visit her?"},
        {"role": "user",
         "content": "Yes, in March. I'm allergic to shellfish, so no seafood tours."},
    ])
    time.sleep(1)  # the dataflow reads new events within a moment

    for hit in engram.recall("alice", "What should I avoid eating in Lisbon?", k=3)["results"]:
        print(f"{hit['score']:.2f}  {hit['content']}")

    prompt = engram.prompt("alice", "Suggest a dinner spot for my visit.", budget_tokens=1500)
    print(f"\nprompt: {prompt['tokens']['total']} tokens, "
          f"{len(prompt['provenance']['memories'])} memories used")
    print(prompt["messages"][0]["content"])

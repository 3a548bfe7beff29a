"""Chat with memory, the answer streamed as it comes, then a thumbs up on it (needs a chat
server configured on engram: `llm.url` / ENGRAM_LLM_URL).

    ENGRAM_URL=http://127.0.0.1:8687 ENGRAM_API_KEY=engram_… python stream_chat.py
"""

import asyncio

from engram_client import AsyncEngram, RateLimited


async def main() -> None:
    async with AsyncEngram() as engram:
        try:
            async with engram.chat_stream("alice", "chat-1", "Where does my sister live?") as chat:
                async for piece in chat.text():
                    print(piece, end="", flush=True)
        except RateLimited as err:
            print(f"busy, retry in {err.retry_after} s")
            return
        print()
        assert chat.done is not None and chat.prompt is not None
        await engram.feedback("alice", chat.done["message_id"], chat.prompt["skill_id"], 1)


asyncio.run(main())

"""Server-sent events from a FastAPI app: deploy this file with

    levers9 deploy examples/sse.py

and watch the ticks arrive one a second, as the app sends them
(see docs/endpoints.md#streamed-answers):

    curl -N http://127.0.0.1:1994/endpoint/default/ticks/ticks?count=5

or in a browser: new EventSource("/endpoint/default/ticks/ticks?count=5").
Leaving early (Ctrl-C) stops the app's generator. `default` is the
workspace's name (`levers9 workspace show`).
"""

from levers9 import Image, asgi

image = Image().add_python_packages(["fastapi"])


@asgi(name="ticks", public=True, image=image, concurrency=32)
def make_ticks():
    import asyncio

    from fastapi import FastAPI
    from fastapi.responses import StreamingResponse

    api = FastAPI()

    @api.get("/ticks")
    def ticks(count: int = 10):
        async def events():
            for i in range(count):
                yield f"data: tick {i}\n\n"
                await asyncio.sleep(1)

        return StreamingResponse(events(), media_type="text/event-stream")

    return api

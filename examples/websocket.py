"""A websocket echo from a FastAPI app: deploy this file with

    levers9 deploy examples/websocket.py

and talk to it with any websocket client, e.g. websocat:

    websocat ws://127.0.0.1:1994/endpoint/default/echo/ws
    hello
    echo: hello

or in a browser: new WebSocket("ws://127.0.0.1:1994/endpoint/default/echo/ws").
Typing "bye" makes the app close the connection with code 4000; closing
the client makes the app's receive raise WebSocketDisconnect. Each
connection is one task (`levers9 task list`) and holds one of the
container's 32 slots; it ends at the function's timeout (here an hour).
`default` is the workspace's name (`levers9 workspace show`); see
docs/endpoints.md#websockets.
"""

from levers9 import Image, asgi

image = Image().add_python_packages(["fastapi"])


@asgi(name="echo", public=True, image=image, concurrency=32, timeout=3600)
def make_echo():
    from fastapi import FastAPI, WebSocket, WebSocketDisconnect

    api = FastAPI()

    @api.websocket("/ws")
    async def echo(websocket: WebSocket):
        await websocket.accept()
        try:
            while True:
                text = await websocket.receive_text()
                if text == "bye":
                    await websocket.close(code=4000, reason="bye")
                    return
                await websocket.send_text(f"echo: {text}")
        except WebSocketDisconnect as gone:
            print(f"the client left with code {gone.code}")

    return api

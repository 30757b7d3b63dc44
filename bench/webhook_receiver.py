"""A bare HTTPS webhook receiver for bench/webhooks.py: answers 200 to every POST and records
each event's arrival (wall clock). ``GET /stats`` answers what arrived. Run as
``python webhook_receiver.py PORT CERT KEY``."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import uvicorn

arrivals: list[tuple[str, str | None, float]] = []


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    if scope["method"] == "GET":
        payload = json.dumps(arrivals).encode()
    else:
        event = json.loads(body)
        arrivals.append((event["id"], event["data"].get("job_id"), time.time()))
        payload = b"ok"
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": payload})


if __name__ == "__main__":
    port, cert, key = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        ssl_certfile=cert,
        ssl_keyfile=key,
        log_level="warning",
        access_log=False,
    )

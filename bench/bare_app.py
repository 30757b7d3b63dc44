"""A bare FastAPI endpoint answering the same JSON as ``GET /v1/account``: the baseline."""

from __future__ import annotations

import os
import sys

from fastapi import FastAPI
from fastapi.responses import Response

BODY = os.environ["BENCH_BODY"].encode()

app = FastAPI()


@app.get("/v1/account")
async def account() -> Response:
    return Response(BODY, media_type="application/json")


@app.get("/v1/api-keys")
async def keys() -> Response:
    return Response(os.environ["BENCH_KEYS_BODY"].encode(), media_type="application/json")


if __name__ == "__main__":
    import uvicorn

    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")

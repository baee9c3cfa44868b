"""SigV4 signing of one Bedrock request, in-process (issue 30's budget: <= 100 us CPU per
request): app/credentials/aws.py's AwsSigner over a Converse body of a few kB, with static
credentials (a refresh is not per request).

Run: python -m bench.sigv4"""

from __future__ import annotations

import asyncio
import time

from botocore.credentials import Credentials

from app.credentials.aws import AwsSigner
from app.translators.base import UpstreamRequest

URL = (
    "https://bedrock-runtime.us-east-1.amazonaws.com/model/"
    "us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse"
)
ROUNDS = 3000


async def main() -> None:
    signer = AwsSigner(
        "bench", Credentials("AKIDEXAMPLE", "bench-secret", "bench-token"), "us-east-1"
    )
    for size in (300, 3000, 30000):
        body = b'{"messages":[{"role":"user","content":[{"text":"' + b"x" * size + b'"}]}]}'
        request = UpstreamRequest(URL, {"content-type": "application/json"}, body, False)
        for _ in range(200):
            await signer.apply(request)
        started = time.process_time()
        for _ in range(ROUNDS):
            await signer.apply(request)
        cost = (time.process_time() - started) / ROUNDS * 1e6
        print(f"body {len(body):>6} bytes: {cost:5.1f} us CPU per signed request")  # noqa: T201


if __name__ == "__main__":
    asyncio.run(main())

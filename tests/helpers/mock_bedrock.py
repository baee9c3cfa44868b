"""A local Amazon Bedrock Runtime on 127.0.0.1 (PROTOCOLS.md H.1; botocore's `bedrock-runtime`
service model is the authority), screening requests as Bedrock does and playing the replies
queued for each model:

- routes `POST /model/{modelId}/converse` and `/converse-stream`, the model id ONE
  percent-encoded path segment (`:` as `%3A`, an ARN's `/` as `%2F`), decoded and recorded
  (`double.calls[-1].model_id`); anything else is a 404;
- auth: `Authorization: Bearer <api_key>`, or SigV4 VERIFIED by recomputing the signature with
  botocore's own signer for the double's test credentials, service `bedrock`, the double's
  region, from the request as received (path still encoded, so `%3A` is signed as `%253A`).
  A wrong signature is AWS's 403 InvalidSignatureException, an unknown key or session token
  its UnrecognizedClientException, no Authorization header Bedrock's "Authorization header
  is missing";
- bodies checked by tests/helpers/bedrock_rules.py (botocore's validator plus the traps no
  shape expresses), a refusal being Bedrock's 400 ValidationException.

Replies are built from one description of the answer (text, tool calls, stop reason, usage)
in both forms, `converse_answer(...)` and `converse_stream(...)`, by the unit tests' builders
(tests/unit/translators/bedrock/converse.py, checked against botocore's output shapes) and the
eventstream encoder checked against botocore's decoder (tests/helpers/bedrock_eventstream.py).
boto3's `bedrock-runtime` client accepts all of it (tests/e2e/test_bedrock_double.py), so the
double speaks Bedrock's protocol, not only what our code expects.

    with MockBedrock() as bedrock:
        bedrock.add_converse(MODEL, converse_answer("Hi"))
        bedrock.add_stream(MODEL, converse_stream("Hi", calls=[("tooluse_1", "f", {"a": 1})]))
        ... point the client at bedrock.base_url, api_key=bedrock.api_key or
        ... SigV4 with bedrock.credentials (access_key, secret_key, token), bedrock.region
        bedrock.calls[-1].model_id, .operation, .auth, .raw_body, .exchange.body

    # a stream failing after some events, and an HTTP error:
    frames = converse_stream_frames("Let me check.")
    bedrock.add_stream(MODEL, stream_reply([*frames[:3], stream_exception("throttlingException")]))
    bedrock.add_converse(MODEL, bedrock_error(429, "ThrottlingException", "Too many requests"))
"""

from __future__ import annotations

import asyncio
import contextvars
import hmac
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import unquote

import orjson
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.utils import percent_encode

from tests.helpers.bedrock_eventstream import event_frame, exception_frame
from tests.helpers.bedrock_rules import request_problem
from tests.helpers.mock_upstream import Exchange, Frame, MockUpstream, Reply
from tests.unit.translators.bedrock.converse import answer, events, text, tool_use

ROUTE = re.compile(r"/model/(?P<model>[^/?]+)/(?P<operation>converse|converse-stream)")
EVENTSTREAM = "application/vnd.amazon.eventstream"
BEDROCK_FAULT = "http://internal.amazon.com/coral/com.amazon.bedrock/"
CORAL_FAULT = "http://internal.amazon.com/coral/com.amazon.coral.service/"
API_KEY = "bedrock-api-key-TEST-SECRET"
CREDENTIALS = Credentials("AKIATESTBEDROCK00001", "test-secret-SECRET-key", "test-session-token")
BAD_SIGNATURE = (
    "The request signature we calculated does not match the signature you provided. Check "
    "your AWS Secret Access Key and signing method. Consult the service documentation for "
    "details."
)
BAD_TOKEN = "The security token included in the request is invalid."
THROTTLED = "Too many requests, please wait before trying again."
AWS_ENVIRONMENT = {
    "AWS_ACCESS_KEY_ID": CREDENTIALS.access_key,
    "AWS_SECRET_ACCESS_KEY": CREDENTIALS.secret_key,
    "AWS_SESSION_TOKEN": CREDENTIALS.token,
    # Only these credentials: no profile files, no instance metadata lookups.
    "AWS_CONFIG_FILE": "/nonexistent/aws-config",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials",
    "AWS_EC2_METADATA_DISABLED": "true",
}
"""A proxy process's environment for SigV4 with the double's credentials (run_proxy's env)."""
_RAW_BODY: contextvars.ContextVar[_RecordingReader] = contextvars.ContextVar("raw_body")

Call = tuple[str, str, dict[str, Any]]  # (toolUseId, name, input)


@dataclass(frozen=True)
class BedrockCall:
    """One routed request: the model id decoded from its path segment, the operation
    (`converse` or `converse-stream`), the auth used (`bearer`, `sigv4` or "" when none)."""

    exchange: Exchange
    model_id: str
    operation: str
    auth: str
    raw_body: bytes  # the body's bytes as sent (what SigV4 signed)


def bedrock_error(status: int, name: str, message: str, fault: str = BEDROCK_FAULT) -> Reply:
    """A non-stream error as AWS sends it: the type in `x-amzn-errortype`, `{"message"}`."""
    return Reply(status, json={"message": message}, headers={"x-amzn-errortype": f"{name}:{fault}"})


def model_path(model_id: str, *, stream: bool = False) -> str:
    """The path botocore builds: the model id percent-encoded as one segment."""
    return f"/model/{percent_encode(model_id)}/{'converse-stream' if stream else 'converse'}"


def content(answer_text: str = "", calls: Sequence[Call] = ()) -> list[dict[str, Any]]:
    """Converse content blocks: the text (if any) first, then each call's toolUse."""
    blocks = [text(answer_text)] if answer_text else []
    return blocks + [tool_use(call_id, name, tool_input) for call_id, name, tool_input in calls]


def _stop(stop_reason: str | None, calls: Sequence[Call]) -> str:
    return stop_reason or ("tool_use" if calls else "end_turn")


def converse_answer(
    answer_text: str = "",
    calls: Sequence[Call] = (),
    *,
    blocks: list[dict[str, Any]] | None = None,
    stop_reason: str | None = None,
    usage: dict[str, int] | None = None,
) -> Reply:
    """A ConverseResponse (checked against botocore's shape); `blocks` replaces the text and
    calls with raw content blocks (reasoning...). The stop reason follows the calls."""
    body = answer(blocks or content(answer_text, calls), _stop(stop_reason, calls), usage)
    return Reply(json=orjson.loads(body))


def converse_stream_frames(
    answer_text: str = "",
    calls: Sequence[Call] = (),
    *,
    blocks: list[dict[str, Any]] | None = None,
    stop_reason: str | None = None,
    usage: dict[str, int] | None = None,
) -> list[Frame]:
    """The same answer as ConverseStream eventstream frames: messageStart, text deltas (no
    start event), each call's contentBlockStart and input fragments (the first ""),
    contentBlockStop, messageStop, metadata; each payload padded with `p` as AWS does."""
    stream = events(blocks or content(answer_text, calls), _stop(stop_reason, calls), usage)
    return [Frame(event_frame(str(event.event), event.data.encode())) for event in stream]


def stream_exception(name: str = "throttlingException", message: str = THROTTLED) -> Frame:
    """A mid-stream error frame (`:message-type: exception`); names as in botocore's
    ConverseStreamOutput: throttlingException, modelStreamErrorException, validationException,
    serviceUnavailableException, internalServerException."""
    return Frame(exception_frame(name, message))


def stream_reply(frames: list[Frame], **reply: Any) -> Reply:
    """Frames played as Bedrock's `application/vnd.amazon.eventstream` body."""
    return Reply(frames=frames, headers={"content-type": EVENTSTREAM}, **reply)


def converse_stream(
    answer_text: str = "", calls: Sequence[Call] = (), **answer_fields: Any
) -> Reply:
    """converse_stream_frames(...) as a Reply, ready for `add_stream`."""
    return stream_reply(converse_stream_frames(answer_text, calls, **answer_fields))


class _RecordingReader:
    """The connection's reader, keeping the body's raw bytes: SigV4 signs those exact bytes,
    and MockUpstream's Exchange keeps only the parsed JSON."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader, self.body = reader, b""

    async def readuntil(self, separator: bytes) -> bytes:
        return await self._reader.readuntil(separator)

    async def readexactly(self, size: int) -> bytes:
        self.body = await self._reader.readexactly(size)
        return self.body

    async def read(self, size: int = -1) -> bytes:
        return await self._reader.read(size)


class MockBedrock(MockUpstream):
    """`with MockBedrock() as bedrock:`; queue replies per model with `add_converse` /
    `add_stream` (used once each, in order); a request with nothing queued gets a 500."""

    def __init__(
        self,
        api_key: str = API_KEY,
        credentials: Credentials = CREDENTIALS,
        region: str = "us-east-1",
    ) -> None:
        super().__init__(screen=self._screen_request)
        self.api_key, self.credentials, self.region = api_key, credentials, region
        self.calls: list[BedrockCall] = []

    def __enter__(self) -> MockBedrock:
        super().__enter__()
        return self

    def add_converse(self, model_id: str, reply: Reply) -> None:
        self.add(reply, model_path(model_id))

    def add_stream(self, model_id: str, reply: Reply) -> None:
        self.add(reply, model_path(model_id, stream=True))

    def reset(self) -> None:
        super().reset()
        self.calls.clear()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        recording = _RecordingReader(reader)
        _RAW_BODY.set(recording)
        await super()._handle(cast(asyncio.StreamReader, recording), writer)

    def _screen_request(self, exchange: Exchange) -> Reply | None:
        path = exchange.path.partition("?")[0]
        route = ROUTE.fullmatch(path)
        if exchange.method != "POST" or route is None:
            return bedrock_error(404, "UnknownOperationException", "Unknown operation", CORAL_FAULT)
        model_id = unquote(route["model"])
        stream = route["operation"] == "converse-stream"
        auth = exchange.headers.get("authorization", "").partition(" ")[0]
        kind = {"Bearer": "bearer", "AWS4-HMAC-SHA256": "sigv4"}.get(auth, "")
        raw_body = _RAW_BODY.get().body
        self.calls.append(BedrockCall(exchange, model_id, route["operation"], kind, raw_body))
        refusal = self._auth_refusal(exchange, raw_body)
        if refusal is not None:
            return refusal
        problem = request_problem(model_id, exchange.body, stream=stream)
        if problem is not None:
            return bedrock_error(400, "ValidationException", problem)
        queue = self._replies.get(model_path(model_id, stream=stream))
        return queue.popleft() if queue else None

    def _auth_refusal(self, exchange: Exchange, body: bytes) -> Reply | None:
        authorization = exchange.headers.get("authorization", "")
        if not authorization:
            return Reply(403, json={"Message": "Authorization header is missing"})
        if authorization.startswith("Bearer "):
            if hmac.compare_digest(authorization.removeprefix("Bearer "), self.api_key):
                return None
            return bedrock_error(403, "UnrecognizedClientException", BAD_TOKEN, CORAL_FAULT)
        problem = sigv4_problem(exchange, body, self.credentials, self.region)
        if problem is None:
            return None
        return bedrock_error(403, problem[0], problem[1], CORAL_FAULT)


def _authorization_fields(authorization: str) -> dict[str, str] | None:
    """`AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...` as a dict."""
    scheme, _, rest = authorization.partition(" ")
    if scheme != "AWS4-HMAC-SHA256":
        return None
    fields = dict(part.strip().partition("=")[::2] for part in rest.split(","))
    return fields if {"Credential", "SignedHeaders", "Signature"} <= fields.keys() else None


INCOMPLETE = (
    "Authorization header requires 'Credential', 'SignedHeaders' and 'Signature' parameters."
)
WRONG_DATE = (
    "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP."
)


def sigv4_problem(
    exchange: Exchange, body: bytes, credentials: Credentials, region: str
) -> tuple[str, str] | None:
    """(AWS error name, message) when the request's SigV4 signature is not the one botocore
    computes for these credentials from the request as received; None when it is."""
    fields = _authorization_fields(exchange.headers.get("authorization", ""))
    if fields is None:
        return "IncompleteSignatureException", INCOMPLETE
    problem = _scope_problem(exchange, fields["Credential"], credentials, region)
    if problem is not None:
        return problem
    timestamp = exchange.headers["x-amz-date"]
    expected = _signature(exchange, body, fields["SignedHeaders"], timestamp, credentials, region)
    if not hmac.compare_digest(expected, fields["Signature"]):
        return "InvalidSignatureException", BAD_SIGNATURE
    return None


def _scope_problem(
    exchange: Exchange, credential: str, credentials: Credentials, region: str
) -> tuple[str, str] | None:
    """`Credential=KEY/YYYYMMDD/region/bedrock/aws4_request`: the key (and session token) the
    double knows, Bedrock's signing name, the double's region, the request's own date."""
    access_key, date, scope_region, service, *_ = [*credential.split("/"), "", "", "", ""]
    token = exchange.headers.get("x-amz-security-token")
    timestamp = exchange.headers.get("x-amz-date", "")
    invalid = "InvalidSignatureException"
    checks = [
        (
            access_key != credentials.access_key or token != credentials.token,
            ("UnrecognizedClientException", BAD_TOKEN),
        ),
        (
            service != "bedrock",
            (invalid, "Credential should be scoped to correct service: 'bedrock'."),
        ),
        (scope_region != region, (invalid, "Credential should be scoped to a valid region.")),
        (not date or not timestamp.startswith(date), (invalid, WRONG_DATE)),
    ]
    return next((error for failed, error in checks if failed), None)


def _signature(
    exchange: Exchange,
    body: bytes,
    signed_headers: str,
    timestamp: str,
    credentials: Credentials,
    region: str,
) -> str:
    """botocore's SigV4 over the request as received: method, encoded path and query, the
    signed headers' values, the body; at the request's own X-Amz-Date."""
    names = signed_headers.split(";")
    headers = {name: exchange.headers.get(name, "") for name in names}
    url = f"http://{exchange.headers.get('host', '')}{exchange.path}"
    request = AWSRequest(method=exchange.method, url=url, headers=headers, data=body)
    request.context["timestamp"] = timestamp
    signer = SigV4Auth(credentials, "bedrock", region)
    canonical = signer.canonical_request(request)
    return str(signer.signature(signer.string_to_sign(request, canonical), request))

"""The official openai SDK, only its base_url changed, through a real proxy process to a real
upstream on 127.0.0.1 for the endpoints ToolRelay passes through (issue 21): moderations, a
transcription, a file round trip, models.retrieve; the client key never reaching the upstream;
allow-lists and rpm; and a 100 MB upload arriving intact while the proxy's memory stays flat."""

from __future__ import annotations

import hashlib
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from tests.e2e.conftest import (
    ANTHROPIC_KEY,
    CLIENT_KEY,
    PROVIDER_KEY,
    RunningProxy,
    run_proxy,
    sdk_client,
)
from tests.helpers.mock_openai_files import FilesUpstream, download_bytes

pytestmark = pytest.mark.e2e

ALICE_KEY = "alice-key-passthrough"  # models: [mini] only
BOB_KEY = "bob-key-passthrough"  # models: [mini, oa/*]
CAROL_KEY = "carol-key-passthrough"  # rpm: 1
AUDIO = (bytes(range(256)) * 40 + b"\r\n--almost-a-boundary\r\n") * 300  # ~3 MB: many chunks
BIG_UPLOAD = 100 * 1024 * 1024
BLOCK = 1024 * 1024
RSS_GROWTH_LIMIT_KB = 40 * 1024


def config(upstream: FilesUpstream, *, passthrough: bool) -> str:
    setting = "  passthrough: oa\n" if passthrough else ""
    return f"""
server:
  api_keys: ["{CLIENT_KEY}"]
  keys:
    - {{name: alice, key: {ALICE_KEY}, models: [mini]}}
    - {{name: bob, key: {BOB_KEY}, models: [mini, "oa/*"]}}
    - {{name: carol, key: {CAROL_KEY}, limits: {{rpm: 1}}}}
{setting}router:
  retries: 0
providers:
  oa: {{kind: openai, base_url: "{upstream.base_url}/v1", api_key: {PROVIDER_KEY}}}
  an: {{kind: anthropic, base_url: "{upstream.base_url}", api_key: {ANTHROPIC_KEY}}}
models:
  - {{name: mini, provider: oa, model: gpt-4o-mini}}
  - {{name: moderator, provider: oa, model: omni-moderation-latest}}
  - {{name: whisper, provider: oa, model: whisper-1}}
  - {{name: claude, provider: an, model: claude-sonnet-4-5}}
"""


@pytest.fixture(scope="module")
def files_upstream() -> Iterator[FilesUpstream]:
    with FilesUpstream() as server:
        yield server


@pytest.fixture(scope="module")
def proxy(
    files_upstream: FilesUpstream, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningProxy]:
    directory = tmp_path_factory.mktemp("passthrough")
    with run_proxy(config(files_upstream, passthrough=True), directory) as running:
        yield running


@pytest.fixture(autouse=True)
def _fresh(files_upstream: FilesUpstream) -> Iterator[None]:
    files_upstream.seen.clear()
    yield
    for seen in files_upstream.seen:  # whatever the test: only the provider's key went up
        assert seen.headers.get("Authorization") == f"Bearer {PROVIDER_KEY}"
        assert "X-Api-Key" not in seen.headers
        for secret in (CLIENT_KEY, ALICE_KEY, BOB_KEY, CAROL_KEY):
            assert secret not in str(seen.headers)


def test_moderations_go_with_the_upstream_model_id(
    proxy: RunningProxy, files_upstream: FilesUpstream
) -> None:
    result = sdk_client(proxy).moderations.create(model="moderator", input="hello")

    assert result.id == "modr-1"
    assert result.model == "omni-moderation-latest"  # the upstream's answer, as it came
    [seen] = files_upstream.seen
    assert seen.json == {"model": "omni-moderation-latest", "input": "hello"}


def test_a_transcription_form_gets_the_upstream_model_and_the_file_intact(
    proxy: RunningProxy, files_upstream: FilesUpstream
) -> None:
    result = sdk_client(proxy).audio.transcriptions.create(
        model="whisper", file=("clip.wav", AUDIO, "audio/wav"), language="fr"
    )

    assert result.text == f"heard {len(AUDIO)} bytes"
    [seen] = files_upstream.seen
    assert seen.fields == {"model": "whisper-1", "language": "fr"}
    assert "Transfer-Encoding" not in seen.headers  # the rewritten length was sent
    assert seen.files["file"] == (len(AUDIO), hashlib.sha256(AUDIO).hexdigest())


def test_a_file_round_trip_without_a_model_uses_the_passthrough_provider(
    proxy: RunningProxy, files_upstream: FilesUpstream
) -> None:
    client = sdk_client(proxy)
    lines = b'{"custom_id": "1", "method": "POST", "url": "/v1/chat/completions"}\n' * 50

    created = client.files.create(file=("in.jsonl", lines), purpose="batch")
    content = client.files.content(created.id)

    assert created.id == "file-abc"
    assert created.bytes == len(lines)
    upload, download = files_upstream.seen
    assert upload.fields == {"purpose": "batch"}
    assert upload.files["file"] == (len(lines), hashlib.sha256(lines).hexdigest())
    assert download.path == "/v1/files/file-abc/content"
    assert content.content == b"".join(download_bytes(files_upstream.download_size))


def test_models_retrieve(proxy: RunningProxy) -> None:
    model = sdk_client(proxy).models.retrieve("whisper")

    assert (model.id, model.object, model.owned_by) == ("whisper", "model", "oa")
    with pytest.raises(openai.NotFoundError):
        sdk_client(proxy).models.retrieve("nope")


def test_a_model_on_another_kind_is_a_400(proxy: RunningProxy) -> None:
    with pytest.raises(openai.BadRequestError, match="anthropic"):
        sdk_client(proxy).moderations.create(model="claude", input="hello")


def test_the_allow_list_decides_model_less_paths(
    proxy: RunningProxy, files_upstream: FilesUpstream
) -> None:
    with pytest.raises(openai.PermissionDeniedError, match="oa/"):
        sdk_client(proxy, ALICE_KEY).files.content("file-abc")
    with pytest.raises(openai.PermissionDeniedError):
        sdk_client(proxy, ALICE_KEY).moderations.create(model="moderator", input="x")

    assert sdk_client(proxy, BOB_KEY).files.content("file-abc").content
    assert sdk_client(proxy, ALICE_KEY).models.retrieve("mini").id == "mini"
    assert len(files_upstream.seen) == 1


def test_rpm_applies(proxy: RunningProxy, files_upstream: FilesUpstream) -> None:
    client = sdk_client(proxy, CAROL_KEY)
    client.moderations.create(model="moderator", input="one")

    with pytest.raises(openai.RateLimitError):
        client.moderations.create(model="moderator", input="two")
    assert len(files_upstream.seen) == 1


def test_a_missing_route_without_the_setting_says_what_to_configure(
    files_upstream: FilesUpstream, tmp_path: Path
) -> None:
    with run_proxy(config(files_upstream, passthrough=False), tmp_path) as running:
        with pytest.raises(openai.NotFoundError, match=r"server\.passthrough"):
            sdk_client(running).files.content("file-abc")
        # A model still finds its provider without the setting.
        assert sdk_client(running).moderations.create(model="moderator", input="x").id
    assert len(files_upstream.seen) == 1


def test_a_client_that_hangs_up_closes_the_upstream_request(
    proxy: RunningProxy, files_upstream: FilesUpstream
) -> None:
    files_upstream.slow_closed.clear()
    headers = {"authorization": f"Bearer {CLIENT_KEY}"}
    with httpx.stream("GET", f"{proxy.base_url}/slow", headers=headers, timeout=10) as response:
        assert response.status_code == 200
        next(response.iter_raw())

    assert files_upstream.slow_closed.wait(5)


def test_a_client_that_hangs_up_mid_upload_stops_the_upstream_upload(
    proxy: RunningProxy, files_upstream: FilesUpstream
) -> None:
    files_upstream.upload_broken.clear()
    form = StreamedForm(BIG_UPLOAD)
    head = (
        "POST /v1/files HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {CLIENT_KEY}\r\n"
        f"Content-Type: multipart/form-data; boundary={form.boundary}\r\n"
        f"Content-Length: {form.length}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", proxy.port)) as connection:
        connection.sendall(head.encode())
        for _, block in zip(range(5), form, strict=False):
            connection.sendall(block)

    assert files_upstream.upload_broken.wait(5)
    assert "Traceback" not in proxy.log.read_text()


def peak_rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc/PID/status")


class StreamedForm:
    """A multipart upload of `size` generated bytes, produced block by block (never whole
    in this test's memory either), hashing the file's bytes as they go out."""

    boundary = "toolrelay-big-upload"

    def __init__(self, size: int) -> None:
        self.size = size
        self.digest = hashlib.sha256()

    @property
    def length(self) -> int:
        return len(self._head()) + self.size + len(self._tail())

    def _head(self) -> bytes:
        return (
            f'--{self.boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\n'
            f'batch\r\n--{self.boundary}\r\nContent-Disposition: form-data; name="file"; '
            'filename="big.jsonl"\r\nContent-Type: application/octet-stream\r\n\r\n'
        ).encode()

    def _tail(self) -> bytes:
        return f"\r\n--{self.boundary}--\r\n".encode()

    def __iter__(self) -> Iterator[bytes]:
        yield self._head()
        for index in range(self.size // BLOCK):
            block = hashlib.sha256(index.to_bytes(8, "big")).digest() * (BLOCK // 32)
            self.digest.update(block)
            yield block
        yield self._tail()


def test_a_100_mb_upload_arrives_intact_and_the_proxy_memory_stays_flat(
    proxy: RunningProxy, files_upstream: FilesUpstream
) -> None:
    assert proxy.process is not None
    form = StreamedForm(BIG_UPLOAD)
    before = peak_rss_kb(proxy.process.pid)

    response = httpx.post(
        f"{proxy.base_url}/files",
        content=iter(form),
        headers={
            "authorization": f"Bearer {CLIENT_KEY}",
            "content-type": f"multipart/form-data; boundary={form.boundary}",
            "content-length": str(form.length),
        },
        timeout=120,
    )

    growth = peak_rss_kb(proxy.process.pid) - before
    assert response.status_code == 200, response.text
    [seen] = files_upstream.seen
    assert seen.files["file"] == (BIG_UPLOAD, form.digest.hexdigest())
    assert seen.headers["Content-Length"] == str(form.length)
    print(f"proxy peak RSS growth over a 100 MB upload: {growth} kB")  # noqa: T201
    assert growth < RSS_GROWTH_LIMIT_KB

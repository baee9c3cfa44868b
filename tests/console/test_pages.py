"""/ui's pages read as a user needs: the Models page draws one bar an hour for each model that
answered (a request with no model is not a model's), and says `unpriced` rather than 0 USD."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.console.conftest import console_config
from tests.integration.conftest import USER, serve

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_models_page_bars_and_unpriced(tmp_path: Path) -> None:
    config = console_config(f"sqlite:///{tmp_path}/p.db", admin_keys=[""])  # loopback
    async with serve(config) as proxy:
        for _ in range(2):
            await proxy.post("/v1/chat/completions", json={"model": "demo", "messages": USER})
        await proxy.post("/v1/chat/completions", json={"model": "nope", "messages": USER})
        await proxy._transport.app.state.proxy.console.writer.flush()  # type: ignore[attr-defined]
        page = (await proxy.get("/ui/models")).text
        assert "<h2>demo</h2>" in page
        assert "(none)" not in page
        assert "2 requests" in page
        assert "unpriced" in page
        assert page.count('class="bar"') == 3  # requests, p50 and p95 this hour
        assert "this hour: 2" in page


def test_a_share_is_drawn_against_100_not_against_its_largest_value() -> None:
    from app.console.ui.charts import HEIGHT, PAD, bar_chart

    [bar] = bar_chart("valid %", [None, 40.0], scale=100.0).bars
    assert float(bar.height) == pytest.approx(0.4 * (HEIGHT - 2 * PAD))
    [full] = bar_chart("requests", [None, 40.0]).bars
    assert float(full.height) == pytest.approx(HEIGHT - 2 * PAD)

"""A Bedrock provider's `region` checked at start-up against botocore's endpoint data: a typo
(`us-eats-1`) would otherwise surface only as every request failing to connect to a host that
does not exist. A warning, not an error: a region newer than the installed botocore works.

botocore is imported only when a Bedrock provider needs the check (its import and endpoint
data cost most of a second), so a start-up without Bedrock never loads it."""

from __future__ import annotations

import difflib
import logging

from app.config import Config, ProviderConfig

logger = logging.getLogger("toolrelay")

SERVICES = ("bedrock-runtime", "bedrock")
"""botocore's endpoint data files Bedrock's runtime endpoints under the `bedrock` service
(`bedrock-runtime-REGION` entries); both are asked, in every partition (aws, aws-cn,
aws-us-gov...)."""


def warn_unknown_regions(config: Config) -> None:
    """One warning per Bedrock provider whose region botocore does not know, naming the
    closest known ones. A provider with its own `base_url` is skipped: the region then
    only signs requests sent wherever that URL points."""
    checked = [(name, p) for name, p in config.providers.items() if _needs_check(p)]
    if not checked:
        return
    known = known_regions()
    for name, provider in checked:
        if provider.region in known:
            continue
        closest = difflib.get_close_matches(provider.region or "", sorted(known), n=3)
        logger.warning(
            "provider '%s': region '%s' is not one botocore knows for bedrock-runtime%s; "
            "its requests will likely fail to connect",
            name,
            provider.region,
            f" (closest: {', '.join(closest)})" if closest else "",
        )


def _needs_check(provider: ProviderConfig) -> bool:
    """Bedrock, sent to the region's own endpoint (no `base_url` given, or an empty one)."""
    regional = f"https://bedrock-runtime.{provider.region}.amazonaws.com"
    return provider.kind == "bedrock" and provider.base_url == regional


def known_regions() -> set[str]:
    """Every region botocore's endpoint data lists for Bedrock, across partitions."""
    import botocore.session  # noqa: PLC0415 (only when a Bedrock provider is configured)

    session = botocore.session.Session()
    return {
        region
        for partition in session.get_available_partitions()
        for service in SERVICES
        for region in session.get_available_regions(service, partition)
    }

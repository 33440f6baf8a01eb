"""The release room's resource: where a release is published (local folder or the Hub)."""

import dagster as dg

from distill_assets.defs.release.publish import PublisherResource

defs = dg.Definitions(resources={"publisher": PublisherResource()})

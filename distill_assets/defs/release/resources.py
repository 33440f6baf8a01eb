"""The release room's resource: where a release is published (local folder, object store, Hub)."""

from __future__ import annotations

import os

import dagster as dg
from upath import UPath

from distill_assets.defs.release.folders import UPLOAD_WORKERS
from distill_assets.defs.release.objectstore import ObjectStorePublisher
from distill_assets.defs.release.publish import HubPublisher, LocalPublisher, Publisher
from distill_assets.lib.lake import is_remote
from distill_assets.lib.settings import Settings
from distill_assets.lib.startup import HUB_REPO_ENV, HUB_TOKEN_ENV, SettingsError


class PublisherResource(dg.ConfigurableResource):
    """Where releases go: the Hugging Face Hub if a repo id and token are set, else local folders.

    Empty fields fall back to the `DISTILL_HUB_REPO_ID` and `HF_TOKEN` environment variables when
    the release runs; with no repo id, versions go to `<hub root>/<dataset name>/`; a repo id
    without a token is a `SettingsError` (never a silent local publish). `upload_workers`: how many
    files a publish to object storage uploads (and copies into place) at once.
    """

    hub_repo_id: str = ""
    hub_token: str = ""
    hub_private: bool = True
    upload_workers: int = UPLOAD_WORKERS

    def publisher(self, settings: Settings) -> Publisher:
        """Return the publisher for these settings."""
        repo_id = self.hub_repo_id or os.environ.get(HUB_REPO_ENV, "")
        token = self.hub_token or os.environ.get(HUB_TOKEN_ENV, "")
        if repo_id and not token:
            raise SettingsError(
                f"{HUB_REPO_ENV}={repo_id} is set but {HUB_TOKEN_ENV} is not: refusing to publish "
                "locally instead of to the Hub"
            )
        if repo_id and token:
            from huggingface_hub import HfApi

            return HubPublisher(repo_id, HfApi(token=token), private=self.hub_private)
        if not is_remote(UPath(settings.hub_root)):
            return LocalPublisher(settings.hub_root, settings.dataset_name)
        return ObjectStorePublisher(
            settings.hub_root, settings.dataset_name, workers=self.upload_workers
        )


defs = dg.Definitions(resources={"publisher": PublisherResource()})

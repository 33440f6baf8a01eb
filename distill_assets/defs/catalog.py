"""How every asset reads in the Dagster UI's catalog: owners, kinds, a layer tag.

Applied once, in `definitions.py`, over every asset spec, so a new asset gets it without
repeating it: the owning team, the `parquet` kind for every table stored in the lake (all but
`release/dataset`, which publishes), and `distill/layer` (raw → bronze, source tables → silver,
curation and release → gold) so the catalog can be filtered by layer.
"""

import dagster as dg

OWNERS = ["team:distill-data"]
LAYER_TAG = "distill/layer"
BRONZE_TABLES = {"events", "records", "validations", "quarantine"}
GOLD_GROUPS = {"curation", "release"}
PUBLISHED_KEYS = {dg.AssetKey(["release", "dataset"])}


def layer(spec: dg.AssetSpec) -> str:
    """Return the asset's layer: bronze (parsed raw), silver (source tables) or gold."""
    if spec.group_name in GOLD_GROUPS:
        return "gold"
    return "bronze" if spec.key.path[-1] in BRONZE_TABLES else "silver"


def catalog_spec(spec: dg.AssetSpec) -> dg.AssetSpec:
    """Return `spec` with the project's owners, kinds and layer tag added."""
    kinds = set() if spec.key in PUBLISHED_KEYS else {"parquet"}
    return spec.merge_attributes(owners=OWNERS, kinds=kinds, tags={LAYER_TAG: layer(spec)})

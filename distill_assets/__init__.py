"""distill: Dagster software-defined assets that turn AI and game exhaust into training datasets."""

"""distill benchmarks: each module measures one hot path against a baseline run in the same
invocation and returns a Markdown section (`python -m bench`, `make bench`)."""

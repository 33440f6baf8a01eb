-- Free the per-event facts once the step facts are built (they are no longer read).
DROP TABLE trace_events

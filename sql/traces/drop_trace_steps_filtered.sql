-- Free the filtered steps once trace_steps holds their fate (they are no longer read).
DROP TABLE trace_steps_filtered

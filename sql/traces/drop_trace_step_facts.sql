-- Free the step facts once the filtered steps hold them (they are no longer read).
DROP TABLE trace_step_facts

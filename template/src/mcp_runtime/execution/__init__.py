"""A tool call's life: its deadline and cancellation, the threads sync tools run in, and
the progress it reports."""

"""A tool call's life: the service's state (its threads, calls in flight and metrics, one
object passed in), a call's deadline and cancellation, the threads sync tools run in,
and the progress a call reports."""

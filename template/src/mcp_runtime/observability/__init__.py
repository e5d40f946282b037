"""What the service tells its operators: structured logs, Prometheus metrics, OpenTelemetry
traces."""

"""The service's own code: its toolsets live in ``toolsets/``, one module each."""

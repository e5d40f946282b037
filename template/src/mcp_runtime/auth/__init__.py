"""Who is calling: verified OAuth bearer tokens, and the request headers a tool may read."""

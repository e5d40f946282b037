"""What this service was rendered with (its Copier answers); the settings override them."""

AUTH = "oauth"

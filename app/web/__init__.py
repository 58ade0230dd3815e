"""The HTTP server: the webhook door and intake, health and metrics, the setup page."""

"""API Gateway, locally: the HTTP API and WebSocket API the template declares, IAM auth, TLS."""

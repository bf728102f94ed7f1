"""Sending to WebSocket connections (API Gateway Management API): the only @connections code."""

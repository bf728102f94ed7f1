"""Thin Lambda entry points: Powertools decorators, parse the event, one call, shape the answer."""

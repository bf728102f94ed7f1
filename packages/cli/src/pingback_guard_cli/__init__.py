"""Operator CLI of a pingback-guard stack (console script `pingback-guard`)."""

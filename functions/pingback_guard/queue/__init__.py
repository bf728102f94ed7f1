"""The dead-letter queue for results the callback received but could not store."""

"""EventBridge, locally: event buses, rules and their patterns, and schedules."""

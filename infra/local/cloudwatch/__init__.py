"""CloudWatch, locally: metrics and alarm evaluation (moto stores alarms, never evaluates them)."""

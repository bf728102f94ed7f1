"""The task model, its lifecycle and the domain's exceptions. No I/O here."""

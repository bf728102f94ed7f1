"""The twin authorizes every AWS call a function makes, as AWS would (README: Authorization)."""

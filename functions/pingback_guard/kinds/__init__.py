"""CAPTCHA kinds: one module per kind (its in.php fields, secrets, answers, lifetime, timing),
and the registry holding the one validator every route uses."""

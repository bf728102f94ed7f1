"""The rules: what each function does with what it receives. No boto3, no requests, no env."""

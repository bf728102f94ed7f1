"""pingback-guard: every solved CAPTCHA result lands in DynamoDB exactly once."""

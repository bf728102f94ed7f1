"""The CAPTCHA provider: the ProviderClient interface and the CaptchaAI (2captcha) client."""

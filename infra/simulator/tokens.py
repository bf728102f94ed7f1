"""Solution tokens that look like reCAPTCHA response tokens."""

from __future__ import annotations

import random
import string
from typing import Final

TOKEN_ALPHABET: Final = string.ascii_letters + string.digits + "_-"
RECAPTCHA_RESPONSE_PREFIX: Final = "03A"


def make_token(seed: int, task_id: str, min_length: int, max_length: int) -> str:
    """A token that depends only on the simulator seed and the task id.

    A string seed makes `random.Random` hash it with SHA-512, so the token is the same in every
    process and independent of PYTHONHASHSEED and of the order in which tasks are solved.
    """
    task_random = random.Random(f"{seed}:{task_id}")
    length = task_random.randint(min_length, max_length)
    body = task_random.choices(TOKEN_ALPHABET, k=length - len(RECAPTCHA_RESPONSE_PREFIX))
    return RECAPTCHA_RESPONSE_PREFIX + "".join(body)

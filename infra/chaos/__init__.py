"""The chaos run: the seed's failure scenario against the local stack, and its baseline."""

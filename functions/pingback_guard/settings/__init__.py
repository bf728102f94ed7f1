"""One frozen settings object per function, read from the environment once at cold start.

Logic never reads ``os.environ``: handlers build these objects and pass the values on. A value
the template sets from one of its Parameters has no default here (the Parameter's Default is the
one place it is stated): a missing variable fails the cold start with its name. Defaults here are
for what the template leaves to the code.

One module per function (and one per part several functions share: env, table, provider, ...),
and nothing imported here: a handler's cold start defines only its own function's settings
classes (each frozen dataclass costs about half a millisecond to define).
"""

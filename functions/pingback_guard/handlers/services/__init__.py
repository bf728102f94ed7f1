"""The services the worker routes share, built once from a function's settings: the IAM routes
(POST /tasks, GET /tasks/{id}, report) and the in.php/res.php ones make them the same way, all of
a function's stores on its one DynamoDB client.

One module per family, and nothing imported here: GET /tasks/{id} never imports the submit's
logic, nor a submit the reads'.
"""

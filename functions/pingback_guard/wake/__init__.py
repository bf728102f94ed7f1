"""Starting the poller between scheduled invocations (Lambda Invoke): the only Lambda API code."""

"""SQS as a Lambda event source, locally: the event source mapping's queue poller."""

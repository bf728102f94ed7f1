"""EventBridge Pipes, locally: DynamoDB stream to event bus."""

"""Task storage: the TaskStore interface and the DynamoDB implementation."""

"""The runtime's own machinery: moto's process, the control API, AWS call accounting and faults,
threads and processes."""

"""Demo Shop: a small real web shop the demo integration, the tests and `make run` use."""

"""Jobs: runs (and later builds), their questions, results, cancellation and worker steps."""

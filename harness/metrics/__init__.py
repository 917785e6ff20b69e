"""Context-precision metric variants and the one ranking aggregation they share."""

// Placeholder (issue 5): replaced by the partition work.

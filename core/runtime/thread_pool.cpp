// Placeholder: being written (issue 6).

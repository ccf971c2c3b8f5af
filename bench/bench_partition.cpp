// Placeholder (issue 5): the partition benchmark.
int main() { return 0; }

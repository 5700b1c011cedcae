// The kiln command-line tool: entry point.
int main() { return 0; }

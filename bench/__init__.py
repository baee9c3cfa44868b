"""ToolRelay's benchmark harness: a mock upstream, a load generator and the runner that puts
ToolRelay and its peers side by side. Not part of the test suite; run it with `bench/run`."""

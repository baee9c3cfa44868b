"""Running the proxy for a team: client keys, limits and the store they are counted in (memory
or a shared Redis), metrics, log lines and traces."""

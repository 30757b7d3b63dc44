"""The worker: claims queued runs, runs them in sandboxed processes, sweeps timers."""

"""Planning a study: its config, the run specs, each job's resources and memory, and what a re-invocation heals or retries."""

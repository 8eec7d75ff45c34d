"""ladder's worker side: settings, adapters (Redis, PostgreSQL, RQ), the service and the CLI."""

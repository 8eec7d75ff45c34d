"""The ``ladder worker`` process: RQ's loop over the inbox, the batch jobs it runs, recovery."""

"""ladder's worker side, one subpackage per role (the README's "How it works" maps the rooms).

The library's modules are imported by their rooms: ``worker.boards.reader`` (the leaderboards,
needs only redis), ``worker.store.history`` (a player's rating history from PostgreSQL);
RQ's job functions are ``worker.queue.jobs.*``.
"""

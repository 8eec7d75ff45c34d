"""The read-only HTTP API: the reader library as JSON over GET, for browsers and CDNs.

``create_app(config, redis, engine)`` builds a FastAPI app; ``ladder serve`` runs it under
uvicorn. Each route answers the callers its scope lets in (``auth``: API tokens, 401 and 403).
Every answer is JSON: 200, 400 for a bad parameter, 404 for an unknown ladder,
board or player, 503 while Redis or PostgreSQL cannot be reached (within 5 s, the body naming
the store); never a 500 for any input. Requests that read PostgreSQL run on threads of their
own, so a hung PostgreSQL never holds up the endpoints that read Redis only.
Successful reads and 404s carry a short shared-cache lifetime so a CDN can absorb traffic.

The OpenAPI document at ``/openapi.json`` is generated from the typed parameters and the
response models, and every answer is checked against its model, so the two cannot drift;
``/docs`` lists the operations from that document as a plain page (no scripts, no network).

Player ids may contain ``/``: clients percent-encode it (``%2F``) and the app routes on the
raw path so the encoded slash stays inside the id.

The package imports nothing: each caller imports the room it needs, so the console's routes
(``worker.entrypoints.console.routes``, which ``app`` adds) can import ``auth`` and the other rooms
without running ``app`` first. The rooms: ``app`` (create_app, the document, the docs page),
``models`` (the response models), ``params`` (the typed parameters), ``errors`` (refusals and their
answers), ``caching``, ``auth`` (who may read each route), ``reads`` (what the routes read, and the
PostgreSQL lane), and one router module per group of routes: ``ladders`` (ladders, boards, players),
``history`` (a player's rating changes, the preview), ``boards`` (among, export).
"""

"""The web console: server-rendered HTML pages with SVG charts, served by ``ladder serve``."""

"""What a page looks like in headless Chromium at a given width, measured by the browser.

``measure(url, width)`` loads the page in an ``<iframe>`` of that width (its viewport) inside a
page of the same origin (a small proxy serves both, so the frame's layout can be read), and
returns what its script found: the elements that reach outside the viewport (but for those
inside a container that scrolls sideways), the rendered size of every chart text, the boxes
of the games table's headers, the charts' legends and what they plot.
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
import threading
import urllib.error
import urllib.parse
import urllib.request
from html import unescape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from worker.entrypoints.console.png import SECONDS, base_flags, chromium

SCRIPT = """<!doctype html><html><body style="margin:0">
<iframe id="f" style="border:0;width:%(width)dpx;height:%(height)dpx"></iframe>
<pre id="result">pending</pre>
<script>
const f = document.getElementById('f');
f.onload = () => { try {
  const w = f.contentWindow, d = f.contentDocument, vw = d.documentElement.clientWidth;
  const name = (el) => el.tagName.toLowerCase() +
    (el.getAttribute('class') ? '.' + el.getAttribute('class').split(' ').join('.') : '');
  const scrolls = (el) => {
    for (let p = el.parentElement; p; p = p.parentElement) {
      const o = w.getComputedStyle(p).overflowX;
      if (o === 'auto' || o === 'scroll') return true;
    }
    return false;
  };
  const box = (el) => { const r = el.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const over = [];
  for (const el of d.body.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.width > 0 && (r.right > vw + 0.5 || r.left < -0.5) && !scrolls(el)) over.push(name(el));
  }
  const fonts = [...d.querySelectorAll('svg.chart text')].map((t) => {
    const svg = t.ownerSVGElement;
    const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
    return parseFloat(w.getComputedStyle(t).fontSize) * scale;
  });
  const headers = [...d.querySelectorAll('table.games th')].map(
    (c) => [c.textContent.trim(), w.getComputedStyle(c).display, box(c)]);
  const legends = [...d.querySelectorAll('svg.chart g.legend')].map(box);
  const plotted = [...d.querySelectorAll(
    'svg.chart .point, svg.chart path, svg.chart line.diagonal')].map(box);
  document.getElementById('result').textContent = JSON.stringify({
    viewport: vw, page: d.documentElement.scrollWidth, over, fonts, headers, legends, plotted});
} catch (e) {
  document.getElementById('result').textContent = JSON.stringify({error: String(e)});
} };
f.src = %(path)s;
</script></body></html>"""


def measure(url: str, width: int, height: int = 900) -> dict[str, Any]:
    target = urllib.parse.urlsplit(url)
    origin = f"{target.scheme}://{target.netloc}"
    path = target.path + (f"?{target.query}" if target.query else "")
    page = (SCRIPT % {"width": width, "height": height, "path": json.dumps(path)}).encode()

    class SameOrigin(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status = 200
            if self.path == "/measure.html":
                body, kind = page, "text/html"
            else:
                try:
                    with urllib.request.urlopen(origin + self.path, timeout=30) as got:
                        body, kind = got.read(), got.headers.get("content-type", "text/html")
                except urllib.error.HTTPError as refused:  # a favicon, say: passed on as is
                    status, body, kind = refused.code, refused.read(), "text/plain"
            self.send_response(status)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    proxy = ThreadingHTTPServer(("127.0.0.1", 0), SameOrigin)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        with tempfile.TemporaryDirectory(prefix="ladder-chromium-") as profile:
            done = subprocess.run(
                [
                    chromium(),
                    *base_flags(profile),
                    "--virtual-time-budget=20000",
                    f"--window-size={width + 20},{height + 200}",
                    "--dump-dom",
                    f"http://127.0.0.1:{proxy.server_address[1]}/measure.html",
                ],
                capture_output=True,
                text=True,
                timeout=SECONDS,
            )
    finally:
        proxy.shutdown()
        proxy.server_close()
    found = re.search(r'<pre id="result">(.*?)</pre>', done.stdout, re.S)
    assert found is not None, done.stderr[-300:]
    result: dict[str, Any] = json.loads(unescape(found.group(1)))
    assert "error" not in result, result
    return result


def overlaps(a: list[float], b: list[float]) -> bool:
    """Whether two boxes (left, top, right, bottom) share any area."""
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]

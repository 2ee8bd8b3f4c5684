"""Screenshot the static site (``python -m fedpl_core.report.site``) in a real headless Chromium.

No browser download is needed: the PyPI wheel ``kaleido==0.2.1`` ships a headless Chromium
(HeadlessChrome 88) meant for exporting plotly figures.  That binary only runs its own
"scopes" and ignores ``--screenshot`` / ``--remote-debugging-port``, but its ``plotly``
scope loads whatever file ``--plotlyjs=`` names and calls ``Plotly.toImage`` from it.  This
script writes a small stand-in ``plotly.js`` that

1. lays the page out in an ``<iframe srcdoc>`` of the chosen width (real Blink layout, the
   page's own CSS) and measures its full height;
2. serialises that document into an SVG ``<foreignObject>``, draws it on a ``<canvas>`` and
   returns ``canvas.toDataURL('image/png')`` (Chromium's own rasteriser), plus a few counts
   (tables, links, images loaded) that the script prints.

Images inside a ``<foreignObject>`` must be inline, so local ``<img src>`` files and local
stylesheets are inlined as ``data:`` URLs / ``<style>`` before the page is handed over;
remote URLs are not fetched (they would come out blank).  Scripts on the page do not run in
the screenshot (the site has none).

    pip install kaleido==0.2.1      # any environment; not a project dependency
    python tools/site_screenshot.py --site /tmp/site --out outputs/site_screenshot.png

``--chromium`` takes kaleido's ``executable`` folder (or its ``kaleido`` launcher script)
when kaleido is not importable from this interpreter.
"""
from __future__ import annotations

import argparse
import base64
import json
import mimetypes
import re
import subprocess
import sys
import tempfile
from pathlib import Path

JS = r"""
(function () {
  var PAGE = __PAGE__;
  var WIDTH = __WIDTH__, MAXH = __MAXH__, SCALE = __SCALE__;
  function loaded(doc) {
    var imgs = Array.prototype.slice.call(doc.images);
    return Promise.all(imgs.map(function (im) {
      if (im.complete) return null;
      return new Promise(function (r) { im.onload = r; im.onerror = r; });
    })).then(function () {
      return doc.fonts ? doc.fonts.ready : null;
    });
  }
  function shoot() {
    return new Promise(function (resolve, reject) {
      var frame = document.createElement('iframe');
      frame.style.cssText = 'border:0;position:absolute;left:0;top:0;width:' + WIDTH + 'px;height:600px';
      frame.onload = function () {
        var doc = frame.contentDocument;
        loaded(doc).then(function () {
          var root = doc.documentElement;
          var full = Math.max(root.scrollHeight, doc.body ? doc.body.scrollHeight : 0);
          var height = MAXH > 0 ? Math.min(full, MAXH) : full;
          var imgs = Array.prototype.slice.call(doc.images);
          var stats = {
            width: WIDTH, height: height, full_height: full,
            title: doc.title,
            tables: doc.querySelectorAll('table').length,
            table_rows: doc.querySelectorAll('tr').length,
            links: doc.querySelectorAll('a[href]').length,
            images: imgs.length,
            images_loaded: imgs.filter(function (i) { return i.naturalWidth > 0; }).length,
            user_agent: navigator.userAgent
          };
          // Inside an SVG image Blink does not give <a> its link style; copy the colour and
          // underline the real page computed for each link onto the link itself.
          Array.prototype.forEach.call(doc.querySelectorAll('a[href]'), function (a) {
            var cs = frame.contentWindow.getComputedStyle(a);
            a.style.color = cs.color;
            a.style.textDecoration = cs.textDecoration;
            a.style.cursor = cs.cursor;
          });
          var xhtml = new XMLSerializer().serializeToString(root);
          var svg = '<svg xmlns="http://www.w3.org/2000/svg" width="' + WIDTH + '" height="' + height + '">' +
            '<foreignObject x="0" y="0" width="100%" height="100%">' + xhtml + '</foreignObject></svg>';
          var img = new Image();
          img.onload = function () {
            try {
              var c = document.createElement('canvas');
              c.width = Math.round(WIDTH * SCALE); c.height = Math.round(height * SCALE);
              var ctx = c.getContext('2d');
              ctx.fillStyle = '#ffffff'; ctx.fillRect(0, 0, c.width, c.height);
              ctx.scale(SCALE, SCALE);
              ctx.drawImage(img, 0, 0);
              stats.png = c.toDataURL('image/png').replace(/^data:image\/png;base64,/, '');
              resolve(JSON.stringify(stats));
            } catch (e) { reject(e); }
          };
          img.onerror = function () { reject(new Error('the SVG foreignObject image failed to load')); };
          img.src = 'data:image/svg+xml;charset=utf-8,' + encodeURIComponent(svg);
        }, reject);
      };
      frame.srcdoc = PAGE;
      document.body.appendChild(frame);
    });
  }
  window.Plotly = {version: '2.0.0', toImage: function () { return shoot(); }};
})();
"""

IMG_SRC = re.compile(r'(<img\b[^>]*?\bsrc=)(["\'])(.*?)\2', re.I | re.S)
CSS_LINK = re.compile(r'<link\b[^>]*\brel=["\']?stylesheet["\']?[^>]*>', re.I | re.S)
HREF = re.compile(r'\bhref=(["\'])(.*?)\1', re.I | re.S)


def _local(base: Path, ref: str) -> Path | None:
    if re.match(r"^[a-z][a-z0-9+.-]*:", ref, re.I) or ref.startswith("//"):
        return None
    path = (base / ref.split("#")[0].split("?")[0]).resolve()
    return path if path.is_file() else None


def inline_page(page: Path) -> tuple[str, list[str]]:
    """The page's HTML with local images as data: URLs and local stylesheets inlined."""
    html = page.read_text(encoding="utf-8")
    missing: list[str] = []

    def img(m: re.Match) -> str:
        path = _local(page.parent, m.group(3))
        if path is None:
            if not m.group(3).startswith("data:"):
                missing.append(m.group(3))
            return m.group(0)
        mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        return f"{m.group(1)}{m.group(2)}data:{mime};base64,{data}{m.group(2)}"

    def css(m: re.Match) -> str:
        href = HREF.search(m.group(0))
        path = _local(page.parent, href.group(2)) if href else None
        if path is None:
            missing.append(href.group(2) if href else m.group(0))
            return m.group(0)
        return "<style>" + path.read_text(encoding="utf-8") + "</style>"

    return CSS_LINK.sub(css, IMG_SRC.sub(img, html)), missing


def find_launcher(given: str | None) -> Path:
    if given:
        path = Path(given).expanduser()
        if path.is_dir():
            for cand in (path / "kaleido", path / "executable" / "kaleido"):
                if cand.is_file():
                    return cand
            sys.exit(f"error: no kaleido launcher script in {path}")
        if path.is_file():
            return path
        sys.exit(f"error: --chromium {given}: no such file or folder")
    try:
        import kaleido  # noqa: PLC0415
    except ImportError:
        sys.exit("error: no headless Chromium found. Install the wheel that bundles one, "
                 "`pip install kaleido==0.2.1` (into any environment), or pass --chromium "
                 "<path to kaleido's executable/ folder or its kaleido script>.")
    launcher = Path(kaleido.__file__).parent / "executable" / "kaleido"
    if not launcher.is_file():
        sys.exit(f"error: kaleido {getattr(kaleido, '__version__', '?')} has no bundled "
                 f"Chromium at {launcher}; this script needs kaleido==0.2.1 (kaleido>=1.0 "
                 "uses a system Chrome instead).")
    return launcher


def screenshot(launcher: Path, page: Path, out: Path, width: int, max_height: int,
               scale: float, timeout: float) -> dict:
    html, missing = inline_page(page)
    with tempfile.TemporaryDirectory(prefix="site_shot_") as tmp:
        js = Path(tmp) / "page_shot.js"
        js.write_text(JS.replace("__PAGE__", json.dumps(html).replace("</", "<\\/"))
                      .replace("__WIDTH__", str(int(width)))
                      .replace("__MAXH__", str(int(max_height)))
                      .replace("__SCALE__", repr(float(scale))), encoding="utf-8")
        request = {"data": {"data": [], "layout": {}}, "format": "png",
                   "width": int(width), "height": 100, "scale": 1}
        cmd = ["bash", str(launcher), "plotly", "--no-sandbox", "--disable-gpu",
               "--single-process", f"--plotlyjs={js}"]
        try:
            proc = subprocess.run(cmd, input=json.dumps(request) + "\n", capture_output=True,
                                  text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            sys.exit(f"error: Chromium did not answer within {timeout:.0f} s")
    answers = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    if len(answers) < 2 or answers[-1].get("code") != 0 or not answers[-1].get("result"):
        sys.exit("error: Chromium did not render the page:\n"
                 + (proc.stdout[-2000:] or proc.stderr[-2000:]))
    stats = json.loads(answers[-1]["result"])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(base64.b64decode(stats.pop("png")))
    stats["not_inlined"] = missing
    stats["broken_links"] = broken_links(page)
    return stats


def broken_links(page: Path) -> list[str]:
    """Relative ``href``s on the page whose file does not exist."""
    html = page.read_text(encoding="utf-8")
    out = []
    for _, ref in HREF.findall(html):
        if ref.startswith("#") or re.match(r"^[a-z][a-z0-9+.-]*:", ref, re.I) or ref.startswith("//"):
            continue
        if _local(page.parent, ref) is None:
            out.append(ref)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--site", default="/tmp/site", help="built site folder (default /tmp/site)")
    ap.add_argument("--page", default="index.html", help="page inside --site (default index.html)")
    ap.add_argument("--out", default="outputs/site_screenshot.png", help="PNG to write")
    ap.add_argument("--width", type=int, default=1280, help="viewport width in CSS px (default 1280)")
    ap.add_argument("--max-height", type=int, default=0,
                    help="cut the page at this many CSS px (default 0: the full page)")
    ap.add_argument("--scale", type=float, default=1.0, help="device pixel ratio (default 1)")
    ap.add_argument("--chromium", help="kaleido 0.2.1 executable/ folder or its kaleido script "
                    "(default: from the importable kaleido package)")
    ap.add_argument("--timeout", type=float, default=120, help="seconds (default 120)")
    args = ap.parse_args(argv)

    page = Path(args.site) / args.page
    if not page.is_file():
        sys.exit(f"error: {page} not found; build the site first "
                 "(python -m fedpl_core.report.site --notebooks reports --out DIR)")
    launcher = find_launcher(args.chromium)
    stats = screenshot(launcher, page, Path(args.out), args.width, args.max_height,
                       args.scale, args.timeout)
    print(f"wrote {args.out}: {stats['width']}x{stats['height']} CSS px "
          f"(page height {stats['full_height']}), scale {args.scale}")
    print(f"rendered by {stats['user_agent']}")
    print(f"title {stats['title']!r}; {stats['tables']} tables ({stats['table_rows']} rows), "
          f"{stats['links']} links, images loaded {stats['images_loaded']}/{stats['images']}")
    print(f"links to missing local files: {len(stats['broken_links'])}"
          + (" (" + ", ".join(stats["broken_links"][:20]) + ")" if stats["broken_links"] else ""))
    scripts = re.findall(r'<script\b[^>]*\bsrc=["\']([^"\']+)', page.read_text(encoding="utf-8"), re.I)
    if scripts:
        print("scripts not run in the screenshot: " + ", ".join(scripts))
    if stats["not_inlined"]:
        print("not inlined (blank in the screenshot): " + ", ".join(stats["not_inlined"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

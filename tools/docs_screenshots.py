"""Screenshots of the documentation site in a real browser, offline: Debian's Chromium
(``apt-get install chromium``), headless, with every host name unresolvable, so a page that
needs the network (a CDN, a remote font) shows it.

    python tools/docs_screenshots.py                                  # outputs/docs/html -> outputs/docs-shots/
    python tools/docs_screenshots.py --pages index.html findings.html notebooks/04_fedmlp.html

Open the PNGs with an image viewer.  Prints the browser's version and one line per page.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--host-resolver-rules=MAP * ~NOTFOUND",
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--site", default=str(ROOT / "outputs" / "docs" / "html"), help="the built site (make docs)")
    ap.add_argument("--out", default=str(ROOT / "outputs" / "docs-shots"), help="folder for the PNGs")
    ap.add_argument("--pages", nargs="*", default=None, help="pages relative to --site (default: every page)")
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=2400)
    a = ap.parse_args(argv)
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    site, out = Path(a.site), Path(a.out)
    if browser is None:
        print("fedpl: error: no Chromium found (Debian: apt-get install chromium)", file=sys.stderr)
        return 2
    if not (site / "index.html").is_file():
        print(f"fedpl: error: no site at {site} (run `make docs` first)", file=sys.stderr)
        return 2
    pages = a.pages or sorted(
        str(p.relative_to(site))
        for p in site.rglob("*.html")
        if not p.name.startswith(("genindex", "search", "py-modindex"))
    )
    out.mkdir(parents=True, exist_ok=True)
    print(subprocess.run([browser, "--version"], capture_output=True, text=True).stdout.strip())
    with tempfile.TemporaryDirectory() as profile:
        for page in pages:
            png = out / (page.replace("/", "__").removesuffix(".html") + ".png")
            r = subprocess.run(
                [
                    browser,
                    *FLAGS,
                    f"--user-data-dir={profile}",
                    f"--window-size={a.width},{a.height}",
                    "--virtual-time-budget=8000",
                    f"--screenshot={png}",
                    (site / page).resolve().as_uri(),
                ],
                capture_output=True,
                text=True,
                timeout=120,
            )
            print(f"{page}: {'ok' if png.is_file() and r.returncode == 0 else 'FAILED'} -> {png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

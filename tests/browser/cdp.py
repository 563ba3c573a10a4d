"""A headless Chromium driven over its DevTools protocol on a pipe (`--remote-debugging-pipe`:
the browser reads commands on fd 3 and writes replies and events on fd 4, each message JSON
ended by a NUL byte). Standard library only: no websocket, no driver package.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from typing import Any, Callable


class CdpError(Exception):
    pass


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    """One headless browser with one page attached (flat session)."""

    def __init__(self, binary: str, width: int = 1280, height: int = 1000) -> None:
        self.profile = tempfile.TemporaryDirectory(prefix="xdsloop-browser-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def fds_3_and_4() -> None:
            # Out of the way first, so neither dup2 closes the other's source.
            a = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        args = [
            binary, "--headless=new", "--remote-debugging-pipe", "--no-first-run",
            "--no-default-browser-check", "--disable-gpu", "--disable-extensions",
            "--disable-background-networking", "--disable-sync", "--hide-scrollbars",
            f"--user-data-dir={self.profile.name}", f"--window-size={width},{height}",
            "about:blank",
        ]
        if os.geteuid() == 0:
            args.insert(1, "--no-sandbox")  # Chromium refuses to run as root with its sandbox.
        # close_fds would close 3 and 4 again after preexec_fn; Python's own descriptors are
        # close-on-exec anyway, so nothing else leaks into the browser.
        self.proc = subprocess.Popen(
            args, preexec_fn=fds_3_and_4, close_fds=False, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._next_id = 0
        self._replies: dict[int, "queue.Queue[dict]"] = {}
        self._lock = threading.Lock()
        self.events: "queue.Queue[dict]" = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        attached = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})
        self.session = attached["sessionId"]
        self.call("Emulation.setDeviceMetricsOverride", {
            "width": width, "height": height, "deviceScaleFactor": 1, "mobile": False,
        }, session=True)

    def _read(self) -> None:
        buffer = b""
        while True:
            try:
                chunk = os.read(self._from_browser, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                for waiting in list(self._replies.values()):
                    waiting.put({"error": {"message": "the browser closed its pipe"}})
                return
            buffer += chunk
            while b"\0" in buffer:
                raw, buffer = buffer.split(b"\0", 1)
                message = json.loads(raw)
                if "id" in message:
                    with self._lock:
                        waiting = self._replies.get(message["id"])
                    if waiting is not None:
                        waiting.put(message)
                else:
                    self.events.put(message)

    def call(self, method: str, params: dict | None = None, session: bool = False,
             timeout: float = 30) -> dict:
        with self._lock:
            self._next_id += 1
            ident = self._next_id
            reply: "queue.Queue[dict]" = queue.Queue()
            self._replies[ident] = reply
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        try:
            answer = reply.get(timeout=timeout)
        except queue.Empty:
            raise CdpError(f"{method}: no answer in {timeout}s") from None
        finally:
            with self._lock:
                self._replies.pop(ident, None)
        if "error" in answer:
            raise CdpError(f"{method}: {answer['error'].get('message')}")
        return answer.get("result", {})

    def navigate(self, url: str) -> None:
        self.call("Page.navigate", {"url": url}, session=True)

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", {
            "expression": expression, "returnByValue": True, "awaitPromise": True,
        }, session=True)
        if "exceptionDetails" in result:
            raise CdpError(f"{expression[:60]}...: {result['exceptionDetails'].get('text')}")
        return result.get("result", {}).get("value")

    def wait_for(self, what: str, expression: str, check: Callable[[Any], bool],
                 timeout: float) -> Any:
        """Evaluates `expression` until `check` holds on its value, or fails after `timeout`
        with the last value seen."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            last = self.evaluate(expression)
            if check(last):
                return last
            time.sleep(0.1)
        raise CdpError(f"timed out after {timeout}s waiting for {what}; last saw: {last!r}")

    def screenshot(self, path: str) -> None:
        shot = self.call("Page.captureScreenshot", {"format": "png"}, session=True)
        with open(path, "wb") as out:
            out.write(base64.b64decode(shot["data"]))

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=5)
        except CdpError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_browser)
        self.profile.cleanup()
